#!/usr/bin/env bash
# The image, for real (issue 39): built by scripts/build-image.sh twice (the same digest:
# reproducible), its runtime configuration the Dockerfile's, then unpacked by umoci as an OCI
# bundle and run under gVisor (runsc --platform=ptrace) the way deploy/kubernetes/ runs it: as
# its own user 10001, read-only root, the config, the TLS Secret and the tool-code ConfigMap
# mounted read-only with kubelet's layout (files that are symlinks into ..data/), the data
# directory on a volume of its own. From outside: GET /healthz over TLS, and one tool call
# (deploy/kubernetes/22-tools.yaml's csv-summary) through `airlock call`.
#   image_test.sh SOURCE_DIR BUILD_DIR WORK_DIR AIRLOCK
# Needs root (mmdebstrap, runsc): otherwise skipped (77). The Debian layer is cached
# (AIRLOCK_IMAGE_CACHE, see build-image.sh): the first run on a machine takes minutes more.
set -euo pipefail
SRC=$1 BUILD=$2 WORK=$3 AIRLOCK=$4
[[ $(id -u) -eq 0 ]] || { echo "SKIPPED: needs root (mmdebstrap, runsc)"; exit 77; }
rm -rf "$WORK"
mkdir -p "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }

echo "== build the image twice: the same digest"
first=$("$SRC/scripts/build-image.sh" "$BUILD" "$WORK/a" | tail -1)
second=$("$SRC/scripts/build-image.sh" "$BUILD" "$WORK/b" | tail -1)
echo "first $first, second $second"
[[ $first == sha256:* && $first == "$second" ]] || fail "two builds of the same inputs differ: $first $second"
rm -rf "$WORK/b"
version=$(cat "$WORK/a/oci/index.json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"])')

echo "== the Dockerfile's runtime configuration is the image's"
python3 "$SRC/tests/image/dockerfile_config.py" "$SRC/Dockerfile" "$WORK/a/oci" "$version"

echo "== unpack as an OCI bundle; mounts as deploy/kubernetes/30-daemon.yaml gives them"
umoci unpack --image "$WORK/a/oci:$version" "$WORK/bundle" >/dev/null
# A volume as kubelet lays out a ConfigMap or Secret: DIR/..TIMESTAMP/FILE, ..data -> it, and
# DIR/FILE -> ..data/FILE (so a tool's file and the TLS key are symlinks in the container).
kubelet_volume() {  # kubelet_volume DIR FILE...  (the files are in DIR already)
  local dir=$1 f; shift
  mkdir "$dir/..2026_01_01_00_00_00.000000001"
  for f in "$@"; do mv "$dir/$f" "$dir/..2026_01_01_00_00_00.000000001/$f"; done
  ln -s ..2026_01_01_00_00_00.000000001 "$dir/..data"
  for f in "$@"; do ln -s "..data/$f" "$dir/$f"; done
  chmod -R a+rX "$dir"
}
mkdir -p "$WORK/config" "$WORK/tls" "$WORK/tools" "$WORK/data"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=airlock.airlock.svc \
  -addext "subjectAltName=DNS:airlock.airlock.svc,IP:127.0.0.1" \
  -keyout "$WORK/tls/tls.key" -out "$WORK/tls/tls.crt" 2>/dev/null
cp "$WORK/tls/tls.crt" "$WORK/ca.crt"
# Secret volume, defaultMode 0440 under fsGroup 10001: group-readable by the daemon's group.
chgrp 10001 "$WORK/tls/tls.key" "$WORK/tls/tls.crt" && chmod 0440 "$WORK/tls/tls.key" "$WORK/tls/tls.crt"
kubelet_volume "$WORK/tls" tls.crt tls.key
chmod 0440 "$WORK/tls/..data/tls.key" && chmod 0444 "$WORK/tls/..data/tls.crt"
python3 - "$SRC/deploy/kubernetes/22-tools.yaml" "$WORK/tools" <<'EOF'
import pathlib, sys, yaml
data = yaml.safe_load(open(sys.argv[1]))["data"]
for name, text in data.items():
    pathlib.Path(sys.argv[2], name).write_text(text)
EOF
kubelet_volume "$WORK/tools" csv_summary.py
key=image-test-key-$RANDOM$RANDOM
cat >"$WORK/config/airlock.yaml" <<EOF
apiVersion: airlock.dev/v1
kind: AirlockConfig
server:
  listen: 127.0.0.1:8750
  tls: {certFile: /etc/airlock-tls/tls.crt, keyFile: /etc/airlock-tls/tls.key}
storage:
  dataDir: /var/lib/airlock/data
principals:
  - name: image-test
    apiKeySha256: $(printf %s "$key" | sha256sum | cut -d' ' -f1)
    tools: [csv-summary, pod-echo]
tiers:
  low: {timeout: 30s, memory: 256Mi, pids: 32, disk: 32Mi, output: 1Mi}
  # deploy/kubernetes/'s high tier: a pod per call, here from the API-server stand-in
  # (tests/kubernetes/standin), whose pods named "ok" end with their call's stdin as output.
  high:
    timeout: 30s
    memory: 256Mi
    pids: 32
    disk: 32Mi
    output: 1Mi
    backend: kubernetes
    kubernetes: {namespace: airlock-tools, kubeconfig: /etc/airlock-kube/kubeconfig, image: ok}
tools:
  - name: csv-summary
    description: the tool of deploy/kubernetes/22-tools.yaml
    risk: low
    runtime: {type: python, file: /opt/airlock/tools/csv_summary.py}
    inputSchema: {type: object, required: [csv], properties: {csv: {type: string}}}
  - name: pod-echo
    description: a high tool, run as a pod
    risk: high
    runtime: {type: command, command: [/bin/cat]}
    inputSchema: {type: object}
EOF
kubelet_volume "$WORK/config" airlock.yaml
# The PersistentVolumeClaim: its root group 10001 and group-writable (fsGroup).
chgrp 10001 "$WORK/data" && chmod 2775 "$WORK/data"
mkdir -p "$WORK/kube"
python3 "$SRC/tests/image/bundle_config.py" "$WORK/bundle/config.json" "$WORK"

echo "== run it under gVisor (runsc --platform=ptrace), in a network namespace of its own"
export AIRLOCK_API_KEY=$key
# Everything below in a fresh network namespace: the container uses it as its host network
# (runsc --network=host), and the calls from outside reach it on its loopback.
unshare --net -- bash -s "$WORK" "$AIRLOCK" "$SRC" <<'EOF'
set -euo pipefail
WORK=$1 AIRLOCK=$2 SRC=$3
ip link set lo up
runsc_() { runsc --root="$WORK/runsc" --platform=ptrace --network=host "$@"; }
cleanup() {
  runsc_ kill image-test KILL 2>/dev/null || true; runsc_ delete --force image-test 2>/dev/null || true
  [[ -n ${STANDIN:-} ]] && kill "$STANDIN" 2>/dev/null || true
}
trap cleanup EXIT
# The API-server stand-in on this namespace's loopback (TLS, a bearer token), and the
# kubeconfig the daemon reads from its mount.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=standin \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$WORK/kube/standin.key" -out "$WORK/kube/ca.pem" 2>/dev/null
token=standin-token-$RANDOM$RANDOM
coproc STANDIN_IO { STANDIN_CERT="$WORK/kube/ca.pem" STANDIN_KEY="$WORK/kube/standin.key" STANDIN_TOKEN=$token \
  exec node "$SRC/tests/kubernetes/standin/server.mjs"; }
STANDIN=$STANDIN_IO_PID
read -r listening port <&"${STANDIN_IO[0]}"
[[ $listening == listening ]] || { echo "FAIL: the stand-in did not start"; exit 1; }
printf '%s\n' "apiVersion: v1" "kind: Config" "current-context: standin" \
  "clusters: [{name: standin, cluster: {server: 'https://127.0.0.1:$port', certificate-authority: ca.pem}}]" \
  "users: [{name: airlock, user: {token: $token}}]" \
  "contexts: [{name: standin, context: {cluster: standin, user: airlock}}]" >"$WORK/kube/kubeconfig"
chmod -R a+rX "$WORK/kube"; rm "$WORK/kube/standin.key"
runsc_ run --detach --bundle "$WORK/bundle" image-test >"$WORK/runsc.out" 2>&1 || {
  cat "$WORK/runsc.out"; exit 1; }
server=https://127.0.0.1:8750
for _ in $(seq 300); do
  curl -sf --cacert "$WORK/ca.crt" "$server/healthz" >/dev/null 2>&1 && break
  runsc_ state image-test 2>/dev/null | grep -q '"status": "running"' || break
  sleep 0.2
done
health=$(curl -s --cacert "$WORK/ca.crt" "$server/healthz") || {
  echo "FAIL: /healthz did not answer; the daemon's output:"; cat "$WORK/runsc.out"; exit 1; }
echo "healthz: $health"
grep -q '"ok"' <<<"$health" || { echo "FAIL: /healthz said $health"; exit 1; }
# The container's first process is the daemon (`runsc exec` itself runs as root: not asked).
uids=$(runsc_ exec image-test /bin/sh -c 'grep ^Uid: /proc/1/status; tr "\0" " " </proc/1/cmdline')
echo "the daemon in the container: $uids"
grep -Eq '^Uid:\s+10001\s+10001\s+10001\s+10001' <<<"$uids" || { echo "FAIL: the daemon is not uid 10001"; exit 1; }
call() { "$AIRLOCK" call "$1" --server "$server" --cacert "$WORK/ca.crt" --input "$2" || true; }
# The high tier, as deploy/kubernetes/ runs it: a pod per call (the stand-in's).
out=$(call pod-echo '{"marker": "through-a-pod"}')
echo "high tier call: $out"
python3 - "$out" <<'PY'
import json, sys
answer = json.loads(sys.argv[1])
assert answer.get("status") == "ok", f"the call did not succeed: {answer}"
assert "through-a-pod" in json.dumps(answer.get("output")), f"its input did not reach the pod: {answer}"
print("high tier: ok, the pod had the call's input")
PY
# The low tier (the local sandbox inside the container): gVisor refuses clone3 (ENOSYS), so
# the sandbox cannot start there, and the call fails closed with a typed error naming why.
out=$(call csv-summary '{"csv": "city,temp\nParis,21\n"}')
echo "low tier call: $out"
python3 - "$out" <<'PY'
import json, sys
answer = json.loads(sys.argv[1])
if answer.get("status") == "ok":
    print("low tier: ran in the local sandbox inside gVisor"); sys.exit(0)
error = answer.get("error") or {}
assert answer.get("verdict") == "setup_error" and error.get("kind") == "sandbox_setup", f"not a typed refusal: {answer}"
print("low tier: refused, fail closed:", error.get("message"))
PY
EOF
echo "PASS"
