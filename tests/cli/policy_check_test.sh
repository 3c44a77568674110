#!/usr/bin/env bash
# `airlock policy check` through the real binary: the decision, the rule that made it, the
# exit status (0 allowed, 1 denied, 2 usage or configuration error), and --json.
set -u
AIRLOCK=$1
fails=0
check() {  # check NAME EXPECTED ACTUAL
  if [[ "$2" == "$3" ]]; then echo "ok   $1"; else echo "FAIL $1: expected [$2], got [$3]"; fails=$((fails + 1)); fi
}
contains() {  # contains NAME NEEDLE HAYSTACK
  if [[ "$3" == *"$2"* ]]; then echo "ok   $1"; else echo "FAIL $1: no [$2] in [$3]"; fails=$((fails + 1)); fi
}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

echo '{"keys": []}' >"$tmp/corp-jwks.json"
cat >"$tmp/airlock.yaml" <<'YAML'
apiVersion: airlock.dev/v1
kind: AirlockConfig
identity:
  issuers:
    - name: corp
      issuer: https://idp.corp.example
      audiences: [airlock]
      jwksFile: corp-jwks.json
roles:
  - name: analyst
    rules:
      - {effect: allow, actions: [invoke], tools: ["csv-*", "weather"], maxRisk: medium}
      - {effect: deny,  actions: [invoke], tools: ["csv-export"]}
bindings:
  - role: analyst
    users: [{issuer: corp, claim: groups, value: analysts}]
principals:
  - name: research-agent
    jwt: {issuer: corp, subject: "system:serviceaccount:agents:research"}
    tools: ["csv-*", "weather"]
  - name: weather-agent
    apiKeySha256: 2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae
    tools: ["weather"]
tools:
  - {name: weather, runtime: {type: command, command: [/bin/cat]}}
  - {name: csv-export, risk: medium, runtime: {type: command, command: [/bin/cat]}}
  - {name: csv-big, risk: high, runtime: {type: command, command: [/bin/cat]}}
YAML
cfg="$tmp/airlock.yaml"
alice='{"sub":"alice","groups":["staff","analysts"]}'

out=$("$AIRLOCK" policy check --config "$cfg" --agent weather-agent --tool weather); rc=$?
check "agent allowed exits 0" 0 $rc
contains "agent allowed names the rule" "rule:   principal weather-agent tools" "$out"

out=$("$AIRLOCK" policy check --config "$cfg" --agent weather-agent --tool csv-export); rc=$?
check "agent denied exits 1" 1 $rc
contains "agent denied: today's message" \
  "principal 'weather-agent' may not call tool 'csv-export' (its tools: weather)" "$out"

out=$("$AIRLOCK" policy check --config "$cfg" --agent research-agent --user-claims "$alice" --tool csv-export); rc=$?
check "deny rule exits 1" 1 $rc
contains "deny rule named" "rule:   role analyst rule 2 (deny invoke csv-export)" "$out"

out=$("$AIRLOCK" policy check --config "$cfg" --user-claims "$alice" --user-issuer corp --tool csv-big); rc=$?
check "maxRisk exceeded exits 1" 1 $rc
contains "maxRisk exceeded named" "over the maxRisk medium" "$out"

out=$("$AIRLOCK" policy check --config "$cfg" --user-claims "$alice" --tool weather --json); rc=$?
check "user alone allowed exits 0" 0 $rc
check "json decision" "True allowed role analyst rule 1 (allow invoke csv-*, weather; maxRisk medium) alice ['analyst'] None" \
  "$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["allowed"], d["kind"], d["rule"], d["user"]["sub"], d["user"]["roles"], d["agent"])' "$out")"

out=$("$AIRLOCK" policy check --config "$cfg" --agent weather-agent --tool nope --json); rc=$?
check "unknown tool exits 1" 1 $rc
check "unknown tool kind" "unknown_tool" "$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["kind"])' "$out")"

"$AIRLOCK" policy check --config "$cfg" --tool weather 2>/dev/null; check "neither agent nor user exits 2" 2 $?
"$AIRLOCK" policy check --config "$cfg" --agent ghost --tool weather 2>/dev/null; check "unknown agent exits 2" 2 $?
"$AIRLOCK" policy check --config "$cfg" --agent weather-agent --tool weather --action fly 2>/dev/null
check "unknown action exits 2" 2 $?
"$AIRLOCK" policy check --config "$cfg" --user-claims '{"groups":[]}' --tool weather 2>/dev/null
check "claims without sub exit 2" 2 $?
"$AIRLOCK" policy check --config "$cfg" --user-claims 'not json' --tool weather 2>/dev/null
check "claims not JSON exit 2" 2 $?
"$AIRLOCK" policy check --agent weather-agent --tool weather 2>/dev/null; check "no --config exits 2" 2 $?

sed 's/actions: \[invoke\], tools: \["csv-export"\]/actions: [invok], tools: ["csv-export"]/' "$cfg" >"$tmp/bad.yaml"
err=$("$AIRLOCK" policy check --config "$tmp/bad.yaml" --agent weather-agent --tool weather 2>&1); rc=$?
check "bad config exits 2" 2 $rc
contains "bad config error at file:line:col" "bad.yaml:13:35: role analyst.rules[1].actions: unknown action 'invok'" "$err"

if ((fails)); then echo "$fails failed"; exit 1; fi
echo "all passed"
