#!/usr/bin/env bash
# Issue #15, through the real binaries: `airlock serve` over TLS, `airlock tools list` with
# https (--cacert, --cert), what a wrong CA or name gets, and the warning for an API that
# listens beyond loopback in clear.
set -u
AIRLOCK=$(realpath "$1")
fails=0
check() {  # check NAME EXPECTED ACTUAL
  if [[ "$2" == "$3" ]]; then echo "ok   $1"; else echo "FAIL $1: expected [$2], got [$3]"; fails=$((fails + 1)); fi
}
has() { [[ $1 == *"$2"* ]] && echo yes || echo "no, in: $1"; }
tmp=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT

# A throwaway PKI: a CA, a server certificate for 127.0.0.1 and localhost, a client
# certificate from the CA and one from another CA.
(
  set -e
  cd "$tmp"
  ca() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$1.key" \
      -out "$1.pem" -days 2 -subj "/CN=$1" -addext basicConstraints=critical,CA:TRUE \
      -addext keyUsage=critical,keyCertSign
  }
  leaf() {  # NAME CA SUBJECT EXTENSIONS
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$1.key" \
      -out "$1.csr" -subj "$3"
    printf '%b\n' "$4" >"$1.ext"
    openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -days 2 -out "$1.pem" \
      -set_serial "0x$(openssl rand -hex 8)" -extfile "$1.ext"
  }
  ca ca
  ca other-ca
  leaf server ca /CN=localhost "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth"
  leaf client ca /O=agents/CN=research-agent "extendedKeyUsage=clientAuth"
  leaf stranger other-ca /O=agents/CN=research-agent "extendedKeyUsage=clientAuth"
) >"$tmp/pki.log" 2>&1 || { echo "FAIL making the PKI:"; cat "$tmp/pki.log"; exit 1; }

KEY=cli-test-key
write_config() {  # FILE SERVER-BLOCK
  cat >"$1" <<EOF
apiVersion: airlock.dev/v1
kind: AirlockConfig
$2
storage: {dataDir: data-$(basename "$1" .yaml)}
principals:
  - name: agent
    apiKeySha256: $(printf %s "$KEY" | sha256sum | cut -d' ' -f1)
    tools: ["*"]
tools:
  - name: cat-json
    description: Echoes its input.
    runtime: {type: command, command: [/bin/cat]}
EOF
}

# Starts `airlock serve --config FILE`; sets $port and $log, or fails.
start() {
  log="$tmp/$(basename "$1" .yaml).log"
  (cd "$tmp" && exec "$AIRLOCK" serve --config "$1") 2>"$log" &
  pids+=($!)
  port=""
  for _ in $(seq 100); do
    port=$(sed -n 's/^airlock serve: listening on port \([0-9]*\).*/\1/p' "$log")
    [[ -n $port ]] && return 0
    sleep 0.1
  done
  echo "FAIL $1 did not start:"; cat "$log"; exit 1
}

list() { "$AIRLOCK" tools list --key "$KEY" "$@" 2>&1; }

write_config "$tmp/tls.yaml" "server: {listen: 0.0.0.0:0, tls: {certFile: server.pem, keyFile: server.key, clientCAFile: ca.pem}}"
start "$tmp/tls.yaml"
check "TLS on 0.0.0.0: no clear-text warning" no "$(grep -q warning "$log" && echo yes || echo no)"
check "TLS: the start line says so" yes "$(has "$(cat "$log")" "listening on port $port (TLS)")"

out=$(list --server "https://127.0.0.1:$port" --cacert "$tmp/ca.pem"); rc=$?
check "https + --cacert: exit 0" 0 $rc
check "https + --cacert: the tools" yes "$(has "$out" "cat-json")"
out=$(list --server "https://localhost:$port/" --cacert "$tmp/ca.pem"); rc=$?
check "https by name (SNI, DNS SAN): exit 0" 0 $rc

out=$(list --server "https://127.0.0.1:$port"); rc=$?
check "https, system CAs only: exit 2" 2 $rc
check "https, system CAs only: says verification failed" yes "$(has "$out" "TLS handshake with https://127.0.0.1:$port failed: certificate verify failed: ")"
out=$(list --server "https://127.0.0.1:$port" --cacert "$tmp/other-ca.pem"); rc=$?
check "https, wrong CA: exit 2" 2 $rc
check "https, wrong CA: says verification failed" yes "$(has "$out" "certificate verify failed")"
out=$(list --server "https://127.0.0.2:$port" --cacert "$tmp/ca.pem"); rc=$?
check "https, an address the certificate does not name: exit 2" 2 $rc
check "https, wrong address: says so" yes "$(has "$out" "certificate verify failed: IP address mismatch")"
out=$(list --server "http://127.0.0.1:$port"); rc=$?
check "plain http to the TLS port: exit 2" 2 $rc

out=$(list --server "https://127.0.0.1:$port" --cacert "$tmp/ca.pem" --cert "$tmp/client.pem" --cert-key "$tmp/client.key"); rc=$?
check "mTLS with a certificate from the CA: exit 0" 0 $rc
out=$(list --server "https://127.0.0.1:$port" --cacert "$tmp/ca.pem" --cert "$tmp/stranger.pem" --cert-key "$tmp/stranger.key"); rc=$?
check "mTLS with a certificate from another CA: exit 2" 2 $rc
check "mTLS with another CA's certificate: the server's refusal" yes "$(has "$out" "unknown ca")"
out=$(list --server "https://127.0.0.1:$port" --cacert "$tmp/nonexistent.pem"); rc=$?
check "missing --cacert file: exit 2" 2 $rc
check "missing --cacert file: named" yes "$(has "$out" "cannot load --cacert $tmp/nonexistent.pem")"

# The MCP bridge (`airlock mcp --server`) verifies the daemon as every client command does.
bridge() {  # bridge ARGS...: initialize through the bridge; its one line of output
  printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' |
    "$AIRLOCK" mcp --key "$KEY" "$@" 2>/dev/null
}
out=$(bridge --server "https://127.0.0.1:$port" --cacert "$tmp/ca.pem")
check "mcp bridge over https + --cacert: initialize answered" yes "$(has "$out" '"protocolVersion":"2025-11-25"')"
out=$(bridge --server "https://127.0.0.1:$port" --cacert "$tmp/other-ca.pem")
check "mcp bridge, wrong CA: a JSON-RPC error naming the verification" yes "$(has "$out" 'certificate verify failed')"
check "mcp bridge, wrong CA: for the request's id" yes "$(has "$out" '"id":1')"

write_config "$tmp/clear.yaml" "server: {listen: 0.0.0.0:0}"
start "$tmp/clear.yaml"
check "clear text on 0.0.0.0: one warning line" 1 "$(grep -c "^airlock: warning: listening on 0.0.0.0:$port without TLS: API keys and tool data cross the network in clear; set server.tls$" "$log")"
out=$(list --server "http://127.0.0.1:$port"); rc=$?
check "clear text: plain http still works" 0 $rc

write_config "$tmp/loopback.yaml" "server: {listen: 127.0.0.1:0}"
start "$tmp/loopback.yaml"
check "clear text on loopback: no warning" no "$(grep -q warning "$log" && echo yes || echo no)"

write_config "$tmp/mismatch.yaml" "server: {listen: 127.0.0.1:0, tls: {certFile: server.pem, keyFile: client.key}}"
err=$(cd "$tmp" && timeout 20 "$AIRLOCK" serve --config mismatch.yaml --check 2>&1); rc=$?
check "--check, a key that is not the certificate's: exit 1" 1 $rc
check "--check names the key file" yes "$(has "$err" "server.tls.keyFile: cannot load $tmp/client.key")"

[[ $fails -eq 0 ]] && echo "all passed" || { echo "$fails failed"; exit 1; }
