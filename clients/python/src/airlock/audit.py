"""Offline verification of what GET /v1/audit/proof/{index} and GET /v1/audit/checkpoint
answer (docs/audit.md, "Proofs, and how a third party checks one"): a record's inclusion in
the RFC 6962 Merkle tree (RFC 9162 section 2.1.3.2, SHA-256, leaves 0x00 || bytes, nodes
0x01 || left || right) and the Ed25519 signature of the checkpoint that states the root.

Fail closed: every function either returns what it verified or raises `VerificationError`.
Ed25519 is not in Python's standard library; it is checked with the `cryptography` package
(Debian's python3-cryptography). Without it the signature cannot be checked and
`SignatureUncheckable` is raised: nothing here ever reports a checkpoint as good when its
signature was not checked."""
from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

PROOF_FORMAT = "airlock-audit-proof/v1"
SIGNATURE_CONTEXT = b"airlock-audit-checkpoint/v1\n"
_HASH_SIZE = 32
_KEY_SIZE = 32
_SIGNATURE_SIZE = 64

PublicKeyLike = Union[bytes, str]


class VerificationError(Exception):
    """Something did not verify; the message names what."""


class ProofInvalid(VerificationError):
    """The record is not proven to be in the tree the checkpoint states (or the document is
    malformed)."""


class SignatureInvalid(VerificationError):
    """The checkpoint is not signed by the trusted key."""


class SignatureUncheckable(VerificationError):
    """The signature could not be checked here (no `cryptography` package). Not a success."""


def leaf_hash(record: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + record).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def root_from_inclusion_proof(index: int, size: int, leaf: bytes, proof: Sequence[bytes]) -> bytes:
    """RFC 9162 section 2.1.3.2: the root the audit path leads to; raises ProofInvalid when
    the path does not have exactly the length that `index` and `size` imply."""
    if not 0 <= index < size:
        raise ProofInvalid(f"leaf index {index} is not below the tree size {size}")
    if len(leaf) != _HASH_SIZE:
        raise ProofInvalid("the leaf hash is not 32 bytes")
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if len(p) != _HASH_SIZE:
            raise ProofInvalid("an inclusion proof hash is not 32 bytes")
        if sn == 0:
            raise ProofInvalid("the inclusion proof is longer than the tree allows")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofInvalid("the inclusion proof is shorter than the tree needs")
    return r


def verify_inclusion(index: int, size: int, leaf: bytes, proof: Sequence[bytes], root: bytes) -> None:
    """Raises ProofInvalid unless `proof` leads from `leaf` at `index` to `root` of `size`."""
    computed = root_from_inclusion_proof(index, size, leaf, proof)
    if not hmac.compare_digest(computed, root):
        raise ProofInvalid(f"the inclusion proof of record {index} leads to another root than "
                           f"the checkpoint's (tree size {size})")


def canonical_json(value: Any) -> bytes:
    """Airlock's canonical JSON (docs/audit.md "Canonical form"): sorted keys by UTF-8 bytes,
    no whitespace, integers only. Python's json escapes exactly the characters it lists."""
    def check(v: Any) -> None:
        if isinstance(v, bool) or v is None or isinstance(v, str):
            return
        if isinstance(v, int):
            if not -(2 ** 63) <= v < 2 ** 64:
                raise ProofInvalid("an integer is out of the canonical range")
            return
        if isinstance(v, list):
            for item in v:
                check(item)
            return
        if isinstance(v, dict):
            for k, item in v.items():
                if not isinstance(k, str):
                    raise ProofInvalid("a key is not a string")
                check(item)
            return
        raise ProofInvalid(f"{type(v).__name__} has no canonical form (integers only)")

    check(value)
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8")  # code point order is UTF-8 byte order


def _strict_json(text: str) -> Any:
    """JSON that refuses duplicate keys and non-finite numbers (never canonical)."""
    def no_duplicates(pairs: List[Any]) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for k, v in pairs:
            if k in out:
                raise ProofInvalid(f"duplicate key {k!r}")
            out[k] = v
        return out

    def no_constant(name: str) -> Any:
        raise ProofInvalid(f"{name} is not JSON")

    try:
        return json.loads(text, object_pairs_hook=no_duplicates, parse_constant=no_constant)
    except ValueError as e:
        raise ProofInvalid(f"not JSON: {e}") from None


def _hex(value: Any, size: int, what: str) -> bytes:
    if not isinstance(value, str):
        raise ProofInvalid(f"{what} is not a hex string")
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        raise ProofInvalid(f"{what} is not hex") from None
    if len(raw) != size or value.lower() != value:
        raise ProofInvalid(f"{what} is not {size} bytes of lower-case hex")
    return raw


def _uint(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ProofInvalid(f"{what} is not a whole number")
    return value


def public_key_bytes(key: PublicKeyLike) -> bytes:
    """A trusted key as 32 raw bytes: bytes, or the hex `airlock audit key` prints."""
    raw = key if isinstance(key, bytes) else _hex(key.strip().lower(), _KEY_SIZE, "public key")
    if len(raw) != _KEY_SIZE:
        raise VerificationError("a public key is 32 bytes (Ed25519)")
    return raw


def key_id(public_key: bytes) -> str:
    """The first 8 bytes of SHA-256 of the raw key, hex (as `airlock audit key` prints)."""
    return hashlib.sha256(public_key).digest()[:8].hex()


def ed25519_verify(public_key: bytes, message: bytes, signature: bytes) -> None:
    """Raises SignatureInvalid when the signature does not hold, SignatureUncheckable when
    it cannot be checked here. Returns only when it was checked and holds."""
    try:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    except ImportError:
        raise SignatureUncheckable(
            "the checkpoint's Ed25519 signature was NOT checked: the 'cryptography' package is "
            "not importable (Debian: apt-get install python3-cryptography)") from None
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(signature, message)
    except InvalidSignature:
        raise SignatureInvalid("the checkpoint's signature does not hold under the trusted key") from None
    except ValueError as e:  # a malformed key
        raise SignatureInvalid(f"the public key is not an Ed25519 key: {e}") from None


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint whose signature was verified under the trusted key."""
    origin: str
    size: int
    root: bytes
    time: int
    key_id: str
    body: bytes


def verify_checkpoint(envelope: Mapping[str, Any], public_key: PublicKeyLike, *,
                      origin: Optional[str] = None) -> Checkpoint:
    """Checks a checkpoint envelope `{checkpoint, key_id, public_key, signature}` against the
    key you trust (from `airlock audit key`, not from the document). Returns it verified, or
    raises VerificationError (SignatureUncheckable when no Ed25519 is available)."""
    trusted = public_key_bytes(public_key)
    if not isinstance(envelope, Mapping):
        raise ProofInvalid("a checkpoint envelope is a JSON object")
    named = _hex(envelope.get("public_key"), _KEY_SIZE, "checkpoint.public_key")
    if not hmac.compare_digest(named, trusted):
        raise SignatureInvalid(f"the checkpoint names key {key_id(named)}, not the trusted key "
                               f"{key_id(trusted)}")
    signature = _hex(envelope.get("signature"), _SIGNATURE_SIZE, "checkpoint.signature")
    body_json = envelope.get("checkpoint")
    if not isinstance(body_json, Mapping):
        raise ProofInvalid("checkpoint.checkpoint is not an object")
    body = canonical_json(dict(body_json))
    ed25519_verify(trusted, SIGNATURE_CONTEXT + body, signature)
    # Signed, so its members are the log's: still check their form before using them.
    if set(body_json) != {"origin", "root", "size", "time"} or not isinstance(body_json["origin"], str):
        raise ProofInvalid("a checkpoint body is {origin, root, size, time}")
    if origin is not None and body_json["origin"] != origin:
        raise ProofInvalid(f"the checkpoint is of log {body_json['origin']!r}, not {origin!r}")
    return Checkpoint(origin=body_json["origin"], size=_uint(body_json["size"], "checkpoint size"),
                      root=_hex(body_json["root"], _HASH_SIZE, "checkpoint root"),
                      time=_uint(body_json["time"], "checkpoint time"), key_id=key_id(trusted),
                      body=body)


@dataclass(frozen=True)
class VerifiedRecord:
    """A record proven to be in the log under a checkpoint signed by the trusted key."""
    index: int
    record: Dict[str, Any]
    record_bytes: bytes
    leaf_hash: bytes
    checkpoint: Checkpoint


def verify_proof(proof: Mapping[str, Any], public_key: PublicKeyLike, *,
                 origin: Optional[str] = None) -> VerifiedRecord:
    """The four steps of docs/audit.md: the checkpoint's key is the trusted one and its
    signature holds; the record's own `index` is the proof's; SHA-256(0x00 || record) leads
    through the inclusion proof to the signed root. Raises VerificationError otherwise."""
    if not isinstance(proof, Mapping) or proof.get("format") != PROOF_FORMAT:
        raise ProofInvalid(f"not an {PROOF_FORMAT} document")
    checkpoint = verify_checkpoint(proof.get("checkpoint", {}), public_key, origin=origin)
    index = _uint(proof.get("index"), "index")
    if _uint(proof.get("tree_size"), "tree_size") != checkpoint.size:
        raise ProofInvalid(f"the proof is for tree size {proof.get('tree_size')} but the "
                           f"checkpoint is for {checkpoint.size}")
    record_text = proof.get("record")
    if not isinstance(record_text, str):
        raise ProofInvalid("record is not a string")
    record = _strict_json(record_text)
    own_index = record.get("index") if isinstance(record, dict) else None
    if type(own_index) is not int or own_index != index:  # noqa: E721 (bool and float are not)
        raise ProofInvalid(f"the record's own index is not {index}")
    record_bytes = record_text.encode("utf-8")
    leaf = leaf_hash(record_bytes)
    if "leaf_hash" in proof and _hex(proof["leaf_hash"], _HASH_SIZE, "leaf_hash") != leaf:
        raise ProofInvalid("leaf_hash is not SHA-256(0x00 || record)")
    path = proof.get("inclusion_proof")
    if not isinstance(path, list):
        raise ProofInvalid("inclusion_proof is not a list")
    hashes = [_hex(h, _HASH_SIZE, "an inclusion proof entry") for h in path]
    verify_inclusion(index, checkpoint.size, leaf, hashes, checkpoint.root)
    return VerifiedRecord(index=index, record=record, record_bytes=record_bytes, leaf_hash=leaf,
                          checkpoint=checkpoint)


def proof_holds(proof: Mapping[str, Any], public_key: PublicKeyLike) -> bool:
    """True only when `verify_proof` verified everything, signature included; False when
    anything failed or could not be checked."""
    try:
        verify_proof(proof, public_key)
    except VerificationError:
        return False
    return True
