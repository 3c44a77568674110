"""Audit proofs fetched from a real daemon and verified offline under the key read from the
log's key file (the out-of-band trust anchor); then the attacks: a record, a path hash, the
root, the signature, the key, the index and the size forged one at a time, each refused. And
the inclusion check against a Merkle tree built here from RFC 6962's definition, and the
signature reported unchecked (never good) without the cryptography package."""
import copy
import hashlib
import json
import os
import subprocess
import sys
import unittest

from support import AGENT_KEY, HERE, DaemonTest

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

import airlock
from airlock import audit


def mth(leaves):
    """RFC 6962 2.1: the Merkle Tree Hash, straight from the definition."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return hashlib.sha256(b"\x00" + leaves[0]).digest()
    k = 1 << ((len(leaves) - 1).bit_length() - 1)
    return hashlib.sha256(b"\x01" + mth(leaves[:k]) + mth(leaves[k:])).digest()


def path(m, leaves):
    """RFC 6962 2.1.1: PATH(m, D[n])."""
    if len(leaves) <= 1:
        return []
    k = 1 << ((len(leaves) - 1).bit_length() - 1)
    if m < k:
        return path(m, leaves[:k]) + [mth(leaves[k:])]
    return path(m - k, leaves[k:]) + [mth(leaves[:k])]


class InclusionAgainstTheDefinition(unittest.TestCase):
    def test_every_leaf_of_every_tree_up_to_33_and_every_wrong_variant(self):
        for n in range(1, 34):
            leaves = [f"record {i}".encode() for i in range(n)]
            root = mth(leaves)
            for m in range(n):
                p = path(m, leaves)
                leaf = audit.leaf_hash(leaves[m])
                audit.verify_inclusion(m, n, leaf, p, root)
                with self.assertRaises(audit.ProofInvalid):
                    audit.verify_inclusion(m, n, audit.leaf_hash(b"forged"), p, root)
                if p:
                    with self.assertRaises(audit.ProofInvalid):
                        audit.verify_inclusion(m, n, leaf, p[:-1], root)
                    flipped = [bytes([p[0][0] ^ 1]) + p[0][1:]] + p[1:]
                    with self.assertRaises(audit.ProofInvalid):
                        audit.verify_inclusion(m, n, leaf, flipped, root)
                with self.assertRaises(audit.ProofInvalid):
                    audit.verify_inclusion(m, n, leaf, p + [root], root)
            with self.assertRaises(audit.ProofInvalid):
                audit.verify_inclusion(n, n, audit.leaf_hash(b"x"), [], root)


class Proofs(DaemonTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        client = airlock.Client(cls.daemon.url, api_key=AGENT_KEY)
        cls.invocations = [client.invoke("echo", {"n": i}) for i in range(5)]
        cls.key = cls.daemon.audit_public_key()

    def proof(self, inv=None):
        inv = inv or self.invocations[2]
        return self.client().audit_proof(inv.audit.index)

    def test_a_fetched_proof_verifies_offline_under_the_trusted_key(self):
        inv = self.invocations[2]
        doc = self.proof(inv)
        verified = airlock.verify_proof(doc, self.key)
        self.assertEqual(verified.index, inv.audit.index)
        self.assertEqual(verified.leaf_hash.hex(), inv.audit.leaf_hash)
        self.assertEqual(verified.record["invocation_id"], inv.id)
        self.assertGreater(verified.checkpoint.size, inv.audit.index)
        self.assertTrue(airlock.proof_holds(doc, self.key.hex()))
        again = self.client().verify_invocation(self.invocations[4], self.key)
        self.assertEqual(again.record["tool"], "echo")
        cp = airlock.verify_checkpoint(self.client().audit_checkpoint(), self.key)
        self.assertEqual(len(cp.root), 32)

    def test_the_independent_third_party_verifier_agrees(self):
        doc = self.proof()
        path_ = os.path.join(self.daemon.dir, "proof.json")
        with open(path_, "w") as f:
            json.dump(doc, f)
        tool = os.path.join(HERE, "..", "audit", "third_party_verify.py")
        done = subprocess.run([sys.executable, tool, path_, self.key.hex()], capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)

    def assertRefused(self, doc, error=audit.VerificationError, key=None):
        with self.assertRaises(error) as caught:
            airlock.verify_proof(doc, key or self.key)
        self.assertFalse(airlock.proof_holds(doc, key or self.key))
        return caught.exception

    def test_a_changed_record_is_refused(self):
        doc = self.proof()
        doc["record"] = doc["record"].replace('"tool":"echo"', '"tool":"evil"')
        self.assertIn('"tool":"evil"', doc["record"])
        doc.pop("leaf_hash")  # the attacker leaves out what would give it away at once
        self.assertRefused(doc, audit.ProofInvalid)

    def test_a_changed_path_hash_is_refused(self):
        doc = self.proof()
        self.assertTrue(doc["inclusion_proof"], "five records: the path is not empty")
        h = doc["inclusion_proof"][0]
        doc["inclusion_proof"][0] = ("0" if h[0] != "0" else "1") + h[1:]
        self.assertRefused(doc, audit.ProofInvalid)
        short = self.proof()
        short["inclusion_proof"].pop()
        self.assertRefused(short, audit.ProofInvalid)

    def test_a_changed_root_or_size_fails_the_signature(self):
        doc = self.proof()
        root = doc["checkpoint"]["checkpoint"]["root"]
        doc["checkpoint"]["checkpoint"]["root"] = ("0" if root[0] != "0" else "1") + root[1:]
        self.assertRefused(doc, audit.SignatureInvalid)
        doc = self.proof()
        doc["checkpoint"]["checkpoint"]["size"] += 1
        doc["tree_size"] += 1
        self.assertRefused(doc, audit.SignatureInvalid)

    def test_a_flipped_signature_is_refused(self):
        doc = self.proof()
        sig = doc["checkpoint"]["signature"]
        doc["checkpoint"]["signature"] = sig[:-1] + ("0" if sig[-1] != "0" else "1")
        self.assertRefused(doc, audit.SignatureInvalid)

    def test_a_log_re_signed_with_another_key_is_refused(self):
        """The attacker rewrites a record, rebuilds the root and signs it with their own key,
        naming that key in the document: only the trusted key counts."""
        from cryptography.hazmat.primitives import serialization
        doc = self.proof(self.invocations[0])
        forged_record = doc["record"].replace('"tool":"echo"', '"tool":"evil"')
        self.assertNotEqual(forged_record, doc["record"])
        attacker = Ed25519PrivateKey.generate()
        leaf = audit.leaf_hash(forged_record.encode())
        cp = doc["checkpoint"]["checkpoint"]
        hashes = [bytes.fromhex(h) for h in doc["inclusion_proof"]]
        cp["root"] = audit.root_from_inclusion_proof(doc["index"], cp["size"], leaf, hashes).hex()
        body = audit.canonical_json(cp)
        doc["record"], doc["leaf_hash"] = forged_record, leaf.hex()
        doc["checkpoint"]["signature"] = attacker.sign(audit.SIGNATURE_CONTEXT + body).hex()
        attacker_public = attacker.public_key().public_bytes(serialization.Encoding.Raw,
                                                             serialization.PublicFormat.Raw)
        doc["checkpoint"]["public_key"] = attacker_public.hex()
        self.assertTrue(airlock.proof_holds(doc, attacker_public), "self-consistent under its own key")
        refused = self.assertRefused(doc, audit.SignatureInvalid)
        self.assertIn(f"names key {audit.key_id(attacker_public)}, not the trusted key", str(refused))

    def test_an_index_or_size_that_is_not_the_records_is_refused(self):
        doc = self.proof()
        doc["index"] += 1
        self.assertRefused(doc, audit.ProofInvalid)
        doc = self.proof()
        doc["tree_size"] -= 1
        self.assertRefused(doc, audit.ProofInvalid)
        doc = self.proof()
        doc["format"] = "something-else"
        self.assertRefused(doc, audit.ProofInvalid)

    def test_without_cryptography_the_signature_is_unchecked_never_good(self):
        doc = self.proof()
        script = (
            "import json, sys\n"
            "sys.modules['cryptography'] = None  # as if the package were not installed\n"
            f"sys.path.insert(0, {os.path.join(HERE, '..', '..', 'clients', 'python', 'src')!r})\n"
            "import airlock\n"
            "doc, key = json.load(sys.stdin), bytes.fromhex(sys.argv[1])\n"
            "assert airlock.proof_holds(doc, key) is False\n"
            "try:\n"
            "    airlock.verify_proof(doc, key)\n"
            "except airlock.SignatureUncheckable as e:\n"
            "    print('unchecked:', e)\n"
            "    sys.exit(3)\n"
            "sys.exit(0)\n")
        done = subprocess.run([sys.executable, "-c", script, self.key.hex()], input=json.dumps(doc),
                              capture_output=True, text=True)
        self.assertEqual(done.returncode, 3, done.stdout + done.stderr)
        self.assertIn("NOT checked", done.stdout)

    def test_the_invocation_must_be_the_proven_one(self):
        other = copy.copy(self.invocations[1])
        object.__setattr__(other, "id", "someone-else")
        with self.assertRaises(audit.ProofInvalid):
            self.client().verify_invocation(other, self.key)


if __name__ == "__main__":
    unittest.main()
