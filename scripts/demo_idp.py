#!/usr/bin/env python3
"""The demo's identity provider: an Ed25519 key, its JWKS, and users' tokens (EdDSA JWTs).
Python's standard library and the openssl CLI only; for `make demo`, never for anything real.

  demo_idp.py init DIR              a new key (DIR/demo-idp.pem) and its JWKS (DIR/jwks.json)
  demo_idp.py token DIR SUB [GROUP ...] [--expires-in SECONDS]
                                    prints a token for user SUB in these groups
  demo_idp.py serve DIR PORT        serves DIR/jwks.json at http://127.0.0.1:PORT/jwks.json

The tokens are what an OIDC provider issues: iss https://idp.demo.example (examples/airlock.yaml,
identity.issuers demo-idp), aud airlock, sub, groups, iat, exp, jti, a kid in the header."""
import base64
import http.server
import json
import os
import subprocess
import sys
import time
import uuid

ISSUER = "https://idp.demo.example"
AUDIENCE = "airlock"
KID = "demo-idp-1"


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def openssl(*args, data=None):
    return subprocess.run(["openssl", *args], input=data, capture_output=True, check=True).stdout


def init(directory):
    os.makedirs(directory, exist_ok=True)
    key = os.path.join(directory, "demo-idp.pem")
    openssl("genpkey", "-algorithm", "ed25519", "-out", key)
    os.chmod(key, 0o600)
    # The raw 32-byte public key: the end of the DER SubjectPublicKeyInfo.
    public = openssl("pkey", "-in", key, "-pubout", "-outform", "DER")[-32:]
    jwks = {"keys": [{"kty": "OKP", "crv": "Ed25519", "x": b64url(public), "kid": KID,
                      "use": "sig", "alg": "EdDSA"}]}
    with open(os.path.join(directory, "jwks.json"), "w") as f:
        json.dump(jwks, f, indent=2)


def token(directory, sub, groups, expires_in=300):
    now = int(time.time())
    header = {"alg": "EdDSA", "typ": "JWT", "kid": KID}
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": sub, "groups": groups, "iat": now,
              "exp": now + expires_in, "jti": str(uuid.uuid4())}
    signing_input = (b64url(json.dumps(header, separators=(",", ":")).encode()) + "." +
                     b64url(json.dumps(claims, separators=(",", ":")).encode()))
    path = os.path.join(directory, "signing-input")
    with open(path, "w") as f:
        f.write(signing_input)
    try:
        signature = openssl("pkeyutl", "-sign", "-inkey", os.path.join(directory, "demo-idp.pem"),
                            "-rawin", "-in", path)
    finally:
        os.unlink(path)
    return signing_input + "." + b64url(signature)


def serve(directory, port):
    with open(os.path.join(directory, "jwks.json"), "rb") as f:
        body = f.read()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path != "/jwks.json":
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def main(argv):
    if len(argv) >= 2 and argv[0] == "init":
        init(argv[1])
    elif len(argv) >= 3 and argv[0] == "token":
        rest, expires_in = argv[3:], 300
        if "--expires-in" in rest:
            i = rest.index("--expires-in")
            expires_in = int(rest[i + 1])
            rest = rest[:i] + rest[i + 2:]
        print(token(argv[1], argv[2], rest, expires_in))
    elif len(argv) == 3 and argv[0] == "serve":
        serve(argv[1], int(argv[2]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
