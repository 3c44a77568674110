"""A real Airlock daemon for the Python client's tests: `airlock serve` (the built binary,
$AIRLOCK_BINARY) on 127.0.0.1 port 0 (the port it prints), with a temp config, tools and
data dir, and a users' identity provider of its own (an Ed25519 key, its JWKS in a file the
config names; tokens minted with the `cryptography` package). Stopped with SIGTERM."""
import base64
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python", "src"))

from cryptography.hazmat.primitives import serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey  # noqa: E402

AIRLOCK = os.path.abspath(os.environ["AIRLOCK_BINARY"]) if os.environ.get("AIRLOCK_BINARY") else ""
ISSUER = "https://idp.client-test.example"
AGENT_KEY = "agent-key-0123456789"
OTHER_AGENT_KEY = "other-agent-key-0123456789"
LIMITED_KEY = "limited-key-0123456789"

TOOLS = {
    "echo.py": "def run(args):\n    print('to the log')\n    return {'echo': args}\n",
    "crash.py": "def run(args):\n    raise RuntimeError('the tool broke')\n",
    "slow.py": "import time\n\ndef run(args):\n    time.sleep(args.get('seconds', 3))\n"
               "    return {'slept': args.get('seconds', 3)}\n",
}

SERVER = "{listen: 127.0.0.1:0, maxBodyBytes: 64Ki, maxConcurrentInvocations: 2, queueLength: 8, drainTimeout: 5s}"


def sha256_hex(text):
    return hashlib.sha256(text.encode()).hexdigest()


def config_yaml(server=SERVER):
    return f"""apiVersion: airlock.dev/v1
kind: AirlockConfig
server: {server}
storage: {{dataDir: data, checkpointEvery: 100}}
identity:
  issuers:
    - {{name: corp, issuer: {ISSUER}, audiences: [airlock], jwksFile: corp-jwks.json}}
roles:
  - name: staff
    rules:
      - {{effect: allow, actions: [invoke], tools: ["*"]}}
      - {{effect: allow, actions: [create_session], sessionTemplates: ["*"]}}
  - name: approver
    rules:
      - {{effect: allow, actions: [approve], tools: ["*"]}}
bindings:
  - role: staff
    users: [{{issuer: corp, claim: groups, value: staff}}]
  - role: approver
    users: [{{issuer: corp, claim: groups, value: approvers}}]
principals:
  - name: agent
    apiKeySha256: {sha256_hex(AGENT_KEY)}
    tools: ["*"]
    sessionTemplates: ["*"]
  - name: other-agent
    apiKeySha256: {sha256_hex(OTHER_AGENT_KEY)}
    tools: ["*"]
    sessionTemplates: ["*"]
  - name: limited
    apiKeySha256: {sha256_hex(LIMITED_KEY)}
    tools: ["echo"]
tiers:
  low: {{timeout: 20s, memory: 128Mi, pids: 16, output: 64Ki}}
  critical: {{backend: local}}
tools:
  - name: echo
    description: Returns its arguments.
    runtime: {{type: python, file: tools/echo.py}}
    inputSchema: {{type: object, properties: {{n: {{type: integer, maximum: 10}}}}, additionalProperties: true}}
  - name: docs.read
    description: A tool whose name has a dot, as the MCP gateway's do.
    runtime: {{type: python, file: tools/echo.py}}
  - name: crash
    runtime: {{type: python, file: tools/crash.py}}
  - name: run-python
    description: Runs model-written Python.
    runtime: {{type: python-code}}
  - name: slow
    runtime: {{type: python, file: tools/slow.py}}
    limits: {{timeout: 30s}}
  - name: payroll
    description: Acts for a user only.
    requiresUser: true
    runtime: {{type: python, file: tools/echo.py}}
  - name: danger
    description: A critical tool.
    risk: critical
    approval: {{approvers: 1, timeout: 120s}}
    runtime: {{type: python, file: tools/echo.py}}
sessionTemplates:
  - name: workspace
    limits: {{idleTimeout: 10m, maxLifetime: 1h}}
    validation: {{allowImports: [time, matplotlib, matplotlib.pyplot]}}
  - name: notebook
    limits: {{idleTimeout: 10m, maxLifetime: 1h}}
    validation: {{allowImports: [matplotlib, matplotlib.pyplot]}}
"""


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class IdentityProvider:
    """An issuer of users' JWTs (EdDSA), its JWKS written where the config reads it."""

    def __init__(self, directory):
        self.key = Ed25519PrivateKey.generate()
        public = self.key.public_key().public_bytes(serialization.Encoding.Raw,
                                                    serialization.PublicFormat.Raw)
        jwks = {"keys": [{"kty": "OKP", "crv": "Ed25519", "x": b64url(public), "kid": "test-1",
                          "use": "sig", "alg": "EdDSA"}]}
        with open(os.path.join(directory, "corp-jwks.json"), "w") as f:
            json.dump(jwks, f)

    def token(self, sub, groups=("staff",), expires_in=600):
        now = int(time.time())
        header = {"alg": "EdDSA", "typ": "JWT", "kid": "test-1"}
        claims = {"iss": ISSUER, "aud": "airlock", "sub": sub, "groups": list(groups), "iat": now,
                  "exp": now + expires_in, "jti": str(uuid.uuid4())}
        signing_input = (b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode()))
        return signing_input + "." + b64url(self.key.sign(signing_input.encode()))


class Daemon:
    """`airlock serve` in its own process group, on the port it chose."""

    def __init__(self, server=SERVER):
        if not AIRLOCK or not os.access(AIRLOCK, os.X_OK):
            raise RuntimeError("set AIRLOCK_BINARY to the built airlock program")
        self.dir = tempfile.mkdtemp(prefix="airlock-pyclient-")
        os.makedirs(os.path.join(self.dir, "tools"))
        for name, text in TOOLS.items():
            with open(os.path.join(self.dir, "tools", name), "w") as f:
                f.write(text)
        self.idp = IdentityProvider(self.dir)
        with open(os.path.join(self.dir, "airlock.yaml"), "w") as f:
            f.write(config_yaml(server))
        self.log_path = os.path.join(self.dir, "daemon.log")
        self.scheme = "https" if "tls:" in server else "http"
        self.proc = None
        self.port = 0

    def start(self):
        self.proc = subprocess.Popen(
            [AIRLOCK, "serve", "--config", "airlock.yaml", "--listen", "127.0.0.1:0"],
            cwd=self.dir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        found = threading.Event()
        log = open(self.log_path, "wb")

        def drain():  # the port from "listening on port N", then the rest to the log file
            for line in self.proc.stderr:
                log.write(line)
                log.flush()
                m = re.search(rb"listening on port (\d+)", line)
                if m and not found.is_set():
                    self.port = int(m.group(1))
                    found.set()
            log.close()
            found.set()

        self.drainer = threading.Thread(target=drain, daemon=True)
        self.drainer.start()
        if not found.wait(60) or not self.port:
            self.stop()
            raise RuntimeError("the daemon did not start:\n" + self.log())
        return self

    @property
    def url(self):
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def audit_public_key(self):
        """The audit log's public key, from its private key file (the trusted source a
        verifier has out of band, as `airlock audit key` prints it)."""
        with open(os.path.join(self.dir, "data", "audit.db.key"), "rb") as f:
            key = serialization.load_pem_private_key(f.read(), password=None)
        return key.public_key().public_bytes(serialization.Encoding.Raw,
                                             serialization.PublicFormat.Raw)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self.drainer.join(10)
            self.proc.stderr.close()
        self.proc = None

    def remove(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class DaemonTest(unittest.TestCase):
    """A daemon per test class (started in setUpClass, stopped in tearDownClass)."""
    server = SERVER

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon(cls.server)
        try:
            cls.prepare(cls.daemon.dir)
            cls.daemon.start()
        except BaseException:
            print(cls.daemon.log(), file=sys.stderr)
            cls.daemon.remove()  # tearDownClass does not run after a failed setUpClass
            raise

    @classmethod
    def prepare(cls, directory):
        """Files the test's config names, written before the daemon starts."""

    @classmethod
    def tearDownClass(cls):
        cls.daemon.remove()

    def client(self, key=AGENT_KEY, **options):
        from airlock import Client
        return Client(self.daemon.url, api_key=key, **options)

    def token(self, sub, groups=("staff",)):
        return self.daemon.idp.token(sub, groups)
