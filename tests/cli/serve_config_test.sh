#!/usr/bin/env bash
# `airlock serve` with a bad configuration, through the real binary (issue #13): it exits
# non-zero, prints every error with file:line:column, and has created nothing on disk.
set -u
AIRLOCK=$(realpath "$1")
fails=0
check() {  # check NAME EXPECTED ACTUAL
  if [[ "$2" == "$3" ]]; then echo "ok   $1"; else echo "FAIL $1: expected [$2], got [$3]"; fails=$((fails + 1)); fi
}
has() { [[ $1 == *"$2"* ]] && echo yes || echo "no, in: $1"; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/bad.yaml" <<'EOF'
apiVersion: airlock.dev/v1
kind: AirlockConfig
server: {listen: "127.0.0.1:99999"}
storage: {dataDir: data}
principals:
  - name: agent
    apiKeySha256: not-hex
tools:
  - name: a
    runtime: {type: command, command: [nosuchprogram]}
    risk: low
    risk: high
EOF
err=$(cd "$tmp" && timeout 20 "$AIRLOCK" serve --config bad.yaml 2>&1); rc=$?
check "bad config exits 2" 2 $rc
check "listen port out of range" yes "$(has "$err" "bad.yaml:3:18: server.listen: port '99999'")"
check "bad key" yes "$(has "$err" "bad.yaml:7:19: principals[0].apiKeySha256: expected 64 hex")"
check "missing program" yes "$(has "$err" "bad.yaml:10:39: tool a.runtime.command: program 'nosuchprogram'")"
check "duplicate key" yes "$(has "$err" "bad.yaml:12:5: tools[0].risk: duplicate key 'risk' (first at line 11)")"
check "one line per error" 4 "$(grep -c 'bad.yaml:' <<<"$err")"
check "no data dir created" no "$([[ -e $tmp/data ]] && echo yes || echo no)"

cat >"$tmp/good.yaml" <<'EOF'
apiVersion: airlock.dev/v1
kind: AirlockConfig
storage: {dataDir: data}
EOF
for listen in 127.0.0.1:99999 localhost:8750 127.0.0.1:x 127.0.0.1; do
  rm -rf "$tmp/data"
  err=$(cd "$tmp" && timeout 20 "$AIRLOCK" serve --config good.yaml --listen "$listen" 2>&1); rc=$?
  check "--listen $listen exits 2" 2 $rc
  check "--listen $listen says why" yes "$(has "$err" "airlock serve: --listen: ")"
  check "--listen $listen: no data dir created" no "$([[ -e $tmp/data ]] && echo yes || echo no)"
done

printf '%s\n' "apiVersion: airlock.dev/v1" "kind: AirlockConfig" "a: &a [x]" "b: *a" >"$tmp/alias.yaml"
err=$(cd "$tmp" && timeout 20 "$AIRLOCK" serve --config alias.yaml 2>&1); rc=$?
check "aliases: exits 2" 2 $rc
check "aliases: refused" yes "$(has "$err" "alias.yaml:3:4: anchor '&a': anchors and aliases are not allowed")"

[[ $fails -eq 0 ]] && echo "all passed" || { echo "$fails failed"; exit 1; }
