#!/usr/bin/env bash
# Installs the Debian 12 packages Airlock builds, tests and benchmarks with: apt-get runs only
# for what is missing. Idempotent; safe to run on every `make`.
set -euo pipefail

PACKAGES=(
  # toolchain (Clang only for the libFuzzer targets)
  g++ cmake ninja-build make pkg-config git clang-14 libclang-rt-14-dev
  # LLVM's linker: the test programs link in a sixth of ld.bfd's time (cmake/Linker.cmake)
  lld
  # a compiler cache for rebuilds and second clones (the Makefile uses it when present)
  ccache
  # libraries
  libseccomp-dev nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libboost1.81-dev libboost-url1.81-dev libidn2-dev libunistring-dev libyaml-cpp-dev libvalijson-dev
  # request bodies and tool output: RapidJSON's reader (common/json_limits.cpp)
  rapidjson-dev
  # JSON Schema: the draft-07 meta-schema tool schemas are checked against (a data file)
  python3-jsonschema
  # audit log: SQLite storage, SHA-256 and Ed25519
  libsqlite3-dev libssl-dev
  # daemon: /metrics
  prometheus-cpp-dev
  # credentials: libpq for the postgres provider; the server for its tests' throwaway clusters
  # (initdb and postgres from /usr/lib/postgresql/15/bin)
  libpq-dev postgresql-15 postgresql-client-15
  # DLP: Vectorscan and RE2
  libvectorscan-dev libre2-dev
  # validate: the parse worker's C tree walk is a module for Debian's python3
  python3-dev
  # runtime: tools run by the sandbox, demo and tests
  python3 python3-yaml procps curl openssl redis-server redis-tools
  # tests: an independent AES-GCM check of the secret store (tests/cli/secrets_cli_test.sh)
  python3-cryptography
  # the sessions' code interpreter: figures a cell draws come back as PNG (tests/server)
  python3-matplotlib
  # the Python client (clients/python): pip installs it in its test, mypy checks its types;
  # websocket-client for its terminal (an optional dependency)
  python3-pip python3-setuptools python3-wheel mypy python3-websocket
  # benchmarks: the reference sandbox; a Jupyter kernel, the code cells' reference
  bubblewrap python3-ipykernel python3-jupyter-client
  # the gvisor backend (tiers.<risk>.backend: gvisor): gVisor's runsc
  runsc
  # the web console's browser test (tests/console): headless Chromium and its WebDriver
  chromium chromium-driver
  # the OCI image (scripts/build-image.sh, tests/image): a Debian root filesystem from Debian's
  # packages, packed as an OCI image; iproute2 for the test's network namespace
  mmdebstrap umoci iproute2
)

# The pure cgroup v2 test host (tests/vm, ctest label vm): QEMU, run under TCG, and
# busybox-static for its initramfs; systemd-analyze checks deploy/systemd. Its kernel is
# unpacked into a cache after the install below (tests/vm/fetch-kernel.sh).
PACKAGES+=(qemu-system-x86 busybox-static systemd)

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

# Node.js and npm run the MCP tests' clients and servers. The machine's own Node (20, with
# its npm) is used when there is one; otherwise Debian's.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then missing+=(nodejs npm); fi

if ((${#missing[@]} > 0)); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null; then SUDO="sudo"; else
      echo "install-deps: need root to install: ${missing[*]}" >&2
      exit 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# The test VM's kernel: Debian's linux-image-amd64, downloaded and unpacked into
# /var/cache/airlock-vm, never installed into /boot; only when no kernel is cached yet.
"$ROOT/tests/vm/fetch-kernel.sh"

# `npm ci` in tests/DIR, exactly as its package-lock.json pins; again only when the lock changes.
npm_ci_in() {
  local dir="$ROOT/tests/$1"
  [[ -f "$dir/package-lock.json" ]] || return 0
  cmp -s "$dir/package-lock.json" "$dir/node_modules/.package-lock.json.installed" 2>/dev/null && return 0
  echo "install-deps: npm ci in tests/$1"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$dir/package-lock.json" "$dir/node_modules/.package-lock.json.installed"
}

# MCP tests: the official SDK clients, servers and conformance suite (with the Node 22 it needs).
npm_ci_in mcp
# Kubernetes tests: the official Kubernetes schemas (kubernetes-models) for the API-server
# stand-in and the deploy/kubernetes/ check.
npm_ci_in kubernetes
# Console tests: selenium-webdriver drives Debian's chromium; oidc-provider is the real OpenID
# provider of the console's sign-in test.
npm_ci_in console
