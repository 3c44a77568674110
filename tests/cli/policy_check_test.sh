#!/usr/bin/env bash
# `airlock policy check` through the real binary: the decision, the rule that made it, the
# exit status (0 allowed, 1 denied, 2 usage or configuration error), and --json. --user-token
# with real tokens: an Ed25519 key made with the openssl CLI, its JWKS in the issuer's
# jwksFile, JWS signed with `openssl pkeyutl -rawin`.
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

# The corp issuer: an Ed25519 key, its JWKS (x: the raw 32-byte public key, the last 32 bytes
# of the DER SubjectPublicKeyInfo), and a function that signs a token with it.
b64url() { basenc --base64url -w0 | tr -d '='; }
openssl genpkey -algorithm ed25519 -out "$tmp/corp.pem" 2>/dev/null
x=$(openssl pkey -in "$tmp/corp.pem" -pubout -outform DER | tail -c 32 | b64url)
printf '{"keys": [{"kty": "OKP", "crv": "Ed25519", "x": "%s", "kid": "corp-1", "use": "sig", "alg": "EdDSA"}]}' \
  "$x" >"$tmp/corp-jwks.json"
sign() {  # sign PAYLOAD_JSON: a compact JWS
  local input
  input="$(printf '{"alg":"EdDSA","typ":"JWT","kid":"corp-1"}' | b64url).$(printf '%s' "$1" | b64url)"
  printf '%s' "$input" >"$tmp/signing-input"
  printf '%s.%s' "$input" "$(openssl pkeyutl -sign -inkey "$tmp/corp.pem" -rawin -in "$tmp/signing-input" | b64url)"
}
now=$(date +%s)
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

# --user-token: a real token, verified as the daemon verifies one.
alice_token=$(sign "{\"iss\":\"https://idp.corp.example\",\"aud\":\"airlock\",\"sub\":\"alice\",\"groups\":[\"staff\",\"analysts\"],\"iat\":$now,\"exp\":$((now + 300))}")
out=$("$AIRLOCK" policy check --config "$cfg" --agent research-agent --user-token "$alice_token" --tool weather); rc=$?
check "user token allowed exits 0" 0 $rc
contains "user token allowed names both rules" \
  "rule:   principal research-agent tools and role analyst rule 1 (allow invoke csv-*, weather; maxRisk medium)" "$out"
contains "user token's roles" "roles:  analyst" "$out"
out=$("$AIRLOCK" policy check --config "$cfg" --user-token "$alice_token" --tool csv-export --json); rc=$?
check "user token denied exits 1" 1 $rc
check "user token json" "False corp alice ['analyst']" \
  "$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["allowed"], d["user"]["issuer"], d["user"]["sub"], d["user"]["roles"])' "$out")"

bob_token=$(sign "{\"iss\":\"https://idp.corp.example\",\"aud\":\"airlock\",\"sub\":\"bob\",\"groups\":[\"staff\"],\"exp\":$((now + 300))}")
out=$("$AIRLOCK" policy check --config "$cfg" --agent research-agent --user-token "$bob_token" --tool weather); rc=$?
check "user token without a role exits 1" 1 $rc
contains "user token without a role" "no role is bound to them" "$out"

expired=$(sign "{\"iss\":\"https://idp.corp.example\",\"aud\":\"airlock\",\"sub\":\"alice\",\"groups\":[\"analysts\"],\"exp\":$((now - 3600))}")
err=$("$AIRLOCK" policy check --config "$cfg" --user-token "$expired" --tool weather 2>&1); rc=$?
check "expired token exits 2" 2 $rc
contains "expired token named" "--user-token is not valid: expired" "$err"

# Tampered: bob's signed header and signature around a payload that puts him in analysts.
forged_payload=$(printf '{"iss":"https://idp.corp.example","aud":"airlock","sub":"bob","groups":["analysts"],"exp":%d}' $((now + 300)) | b64url)
tampered="${bob_token%%.*}.$forged_payload.${bob_token##*.}"
err=$("$AIRLOCK" policy check --config "$cfg" --user-token "$tampered" --tool weather 2>&1); rc=$?
check "tampered token exits 2" 2 $rc
contains "tampered token named" "--user-token is not valid: bad_signature" "$err"

wrong_aud=$(sign "{\"iss\":\"https://idp.corp.example\",\"aud\":\"elsewhere\",\"sub\":\"alice\",\"exp\":$((now + 300))}")
err=$("$AIRLOCK" policy check --config "$cfg" --user-token "$wrong_aud" --tool weather 2>&1); rc=$?
check "wrong audience exits 2" 2 $rc
contains "wrong audience named" "wrong_audience" "$err"

agent_token=$(sign "{\"iss\":\"https://idp.corp.example\",\"aud\":\"airlock\",\"sub\":\"system:serviceaccount:agents:research\",\"exp\":$((now + 300))}")
err=$("$AIRLOCK" policy check --config "$cfg" --user-token "$agent_token" --tool weather 2>&1); rc=$?
check "an agent's token as the user exits 2" 2 $rc
contains "an agent's token is no user's" "invalid_grant" "$err"

"$AIRLOCK" policy check --config "$cfg" --user-token not-a-jwt --tool weather 2>/dev/null
check "a user token that is no JWT exits 2" 2 $?
err=$("$AIRLOCK" policy check --config "$cfg" --user-token "$alice_token" --user-claims "$alice" --tool weather 2>&1); rc=$?
check "--user-token and --user-claims exit 2" 2 $rc
contains "--user-token and --user-claims named" "not both" "$err"
"$AIRLOCK" policy check --config "$cfg" --user-token "$alice_token" --user-issuer corp --tool weather 2>/dev/null
check "--user-issuer with --user-token exits 2" 2 $?

sed 's/actions: \[invoke\], tools: \["csv-export"\]/actions: [invok], tools: ["csv-export"]/' "$cfg" >"$tmp/bad.yaml"
err=$("$AIRLOCK" policy check --config "$tmp/bad.yaml" --agent weather-agent --tool weather 2>&1); rc=$?
check "bad config exits 2" 2 $rc
contains "bad config error at file:line:col" "bad.yaml:13:35: role analyst.rules[1].actions: unknown action 'invok'" "$err"

if ((fails)); then echo "$fails failed"; exit 1; fi
echo "all passed"
