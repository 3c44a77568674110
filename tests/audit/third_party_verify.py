#!/usr/bin/env python3
"""Checks an `airlock audit prove` document as a third party would: with the Python standard
library and the openssl command only, sharing no code with Airlock.

    third_party_verify.py PROOF.json [PINNED_PUBLIC_KEY_HEX]

Exit 0 when the record is in the log the checkpoint signs, 1 when it is not (with the reason).
Without a pinned key the checkpoint is checked against the key the document names, which only
shows the document is self-consistent: pin the log's key (`airlock audit key`) to trust it.
"""
import base64
import hashlib
import json
import os
import subprocess
import sys
import tempfile

ED25519_SPKI_PREFIX = bytes.fromhex("302a300506032b6570032100")
SIGNATURE_CONTEXT = b"airlock-audit-checkpoint/v1\n"


def leaf_hash(data):
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left, right):
    return hashlib.sha256(b"\x01" + left + right).digest()


def root_from_inclusion_proof(index, size, leaf, proof):
    """RFC 9162 section 2.1.3.2."""
    if index >= size:
        raise ValueError("index is not below the tree size")
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if len(p) != 32:
            raise ValueError("a proof hash is not 32 bytes")
        if sn == 0:
            raise ValueError("the proof is too long")
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
        raise ValueError("the proof is too short")
    return r


def canonical(value):
    """The canonical form for a checkpoint body: sorted keys, no whitespace, integers."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def signature_holds(public_key, message, signature):
    pem = (b"-----BEGIN PUBLIC KEY-----\n" + base64.b64encode(ED25519_SPKI_PREFIX + public_key)
           + b"\n-----END PUBLIC KEY-----\n")
    with tempfile.TemporaryDirectory() as tmp:
        paths = {name: os.path.join(tmp, name) for name in ("key.pem", "message", "signature")}
        for name, data in (("key.pem", pem), ("message", message), ("signature", signature)):
            with open(paths[name], "wb") as f:
                f.write(data)
        result = subprocess.run(
            ["openssl", "pkeyutl", "-verify", "-pubin", "-inkey", paths["key.pem"], "-rawin",
             "-in", paths["message"], "-sigfile", paths["signature"]],
            capture_output=True)
        return result.returncode == 0


def main():
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    envelope = doc["checkpoint"]
    checkpoint = envelope["checkpoint"]
    public_key = bytes.fromhex(sys.argv[2] if len(sys.argv) > 2 else envelope["public_key"])
    if bytes.fromhex(envelope["public_key"]) != public_key:
        return "the checkpoint names another key than the pinned one"
    if not signature_holds(public_key, SIGNATURE_CONTEXT + canonical(checkpoint),
                           bytes.fromhex(envelope["signature"])):
        return "the checkpoint signature does not hold"
    record = doc["record"].encode("utf-8")
    if json.loads(record)["index"] != doc["index"]:
        return "the record's own index is not the proven index"
    leaf = leaf_hash(record)
    proof = [bytes.fromhex(h) for h in doc["inclusion_proof"]]
    try:
        root = root_from_inclusion_proof(doc["index"], checkpoint["size"], leaf, proof)
    except ValueError as e:
        return str(e)
    if root != bytes.fromhex(checkpoint["root"]):
        return "the inclusion proof does not lead to the signed root"
    return None


if __name__ == "__main__":
    problem = main()
    if problem:
        print("REJECTED: " + problem)
        sys.exit(1)
    print("ok")
