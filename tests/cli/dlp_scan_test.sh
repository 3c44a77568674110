#!/usr/bin/env bash
# airlock scan, end to end: exit codes, JSON shape, redaction, literals, policies, stdin.
# Usage: dlp_scan_test.sh PATH/TO/airlock
set -u
AIRLOCK=$1
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0

check() {  # check DESCRIPTION EXPECTED ACTUAL
  if [[ "$2" != "$3" ]]; then
    echo "FAIL: $1: expected [$2], got [$3]"
    failures=$((failures + 1))
  else
    echo "ok:   $1"
  fi
}

run() {  # run ARGS... ; sets OUT, ERR, RC
  OUT=$("$AIRLOCK" scan "$@" 2>"$WORK/stderr")
  RC=$?
  ERR=$(cat "$WORK/stderr")
}

json_field() {  # json_field JSON PYTHON-EXPRESSION-ON-d
  python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"
}

printf 'user jane.doe@example.org paid with 4539 6751 1253 2875\n' > "$WORK/pii.txt"
printf 'nothing to see here\n' > "$WORK/clean.txt"
printf 'deploy key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAu1SU\n-----END RSA PRIVATE KEY-----\n' > "$WORK/key.txt"

run "$WORK/clean.txt"
check "nothing found exits 0" 0 "$RC"
check "nothing found prints nothing" "" "$OUT"

run "$WORK/pii.txt"
check "findings exit 1" 1 "$RC"
check "text lists the findings" 2 "$(printf '%s\n' "$OUT" | grep -c 'bytes')"

check "text line format" "email (pii) bytes 5-25 confidence 0.85 action redact" "$(printf '%s\n' "$OUT" | head -1)"

# A file large enough to be scanned in pieces on several CPUs gives what one CPU gives (only one
# CPU under taskset). Secrets sit every few lines, so some straddle the pieces' boundary.
python3 - "$WORK/big.txt" <<'PY'
import sys
lines = []
for i in range(120000):
    lines.append("2026-12-03T12:%02d:%02d.123Z INFO GET /api/v1/items/%d 200 %dms req=%d" % (i % 60, i * 7 % 60, i * 7919 % 1000003, i % 900, i * 2654435761 % 4294967296))
    if i % 7 == 0: lines.append("user jane.doe%d@example.org card 4539 6751 1253 2875 from 81.2.69.%d" % (i, i % 250))
    if i % 11 == 0: lines.append("my phone:")
    if i % 13 == 0: lines.append("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n-----END RSA PRIVATE KEY-----")
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY
cat > "$WORK/keys-redact.yaml" <<'YAML'
apiVersion: airlock.dev/v1
kind: DlpPolicy
spec:
  detectors:
    private_key: {action: redact}
YAML
if command -v taskset >/dev/null && (($(nproc) > 1)); then
  "$AIRLOCK" scan --policy "$WORK/keys-redact.yaml" "$WORK/big.txt" > "$WORK/many.out"
  taskset -c 0 "$AIRLOCK" scan --policy "$WORK/keys-redact.yaml" "$WORK/big.txt" > "$WORK/one.out"
  check "large file: findings listed" 1 "$(($(wc -l < "$WORK/one.out") > 40000))"
  check "large file: several CPUs give one CPU's findings" "" "$(cmp "$WORK/one.out" "$WORK/many.out" 2>&1)"
  "$AIRLOCK" scan --redact --policy "$WORK/keys-redact.yaml" "$WORK/big.txt" 2>/dev/null | sha256sum > "$WORK/many.sum"
  taskset -c 0 "$AIRLOCK" scan --redact --policy "$WORK/keys-redact.yaml" "$WORK/big.txt" 2>/dev/null | sha256sum > "$WORK/one.sum"
  check "large file: the same redacted text" "" "$(cmp "$WORK/one.sum" "$WORK/many.sum" 2>&1)"
else
  echo "skip: large file on several CPUs (one CPU or no taskset)"
fi

# A file is mapped, not read: one that shrinks while it is scanned (here as soon as it is mapped)
# is an error that says so (exit 2), not a crash (SIGBUS) nor a partial result.
for _ in 1 2 3 4; do cat "$WORK/big.txt"; done > "$WORK/shrinking.txt"
"$AIRLOCK" scan "$WORK/shrinking.txt" > /dev/null 2> "$WORK/stderr" &
pid=$!
for _ in $(seq 1 2000); do
  grep -q shrinking.txt "/proc/$pid/maps" 2>/dev/null && break
  sleep 0.001
done
truncate -s 100 "$WORK/shrinking.txt"
wait "$pid"
RC=$?
check "file shrinking under the scan: error exit" 2 "$RC"
check "file shrinking under the scan: says why" "airlock scan: the input file shrank while it was being read" "$(cat "$WORK/stderr")"

run --json "$WORK/pii.txt"
check "json: findings exit 1" 1 "$RC"
check "json: detectors" "['email', 'credit_card']" "$(json_field "$OUT" '[f["detector"] for f in d["findings"]]')"
check "json: byte offsets" "[5, 25, 36, 55]" \
  "$(json_field "$OUT" '[d["findings"][0]["start"], d["findings"][0]["end"], d["findings"][1]["start"], d["findings"][1]["end"]]')"
check "json: fields" "['detector', 'category', 'start', 'end', 'confidence', 'action', 'example']" \
  "$(json_field "$OUT" 'list(d["findings"][0].keys())')"
check "json: no redacted text without --redact" "False" "$(json_field "$OUT" '"redacted" in d')"
check "json: never prints the secret" "" "$(printf '%s' "$OUT" | grep -o -e 'jane.doe' -e '4539')"

run --json --redact "$WORK/pii.txt"
check "json+redact: redacted text" \
  "user [REDACTED:EMAIL] paid with ***************2875" "$(json_field "$OUT" 'd["redacted"].strip()')"

run --redact "$WORK/pii.txt"
check "redact: prints the redacted input" "user [REDACTED:EMAIL] paid with ***************2875" "$OUT"
check "redact: findings on stderr" 2 "$(printf '%s\n' "$ERR" | grep -c 'bytes')"

OUT=$("$AIRLOCK" scan --redact - < "$WORK/pii.txt" 2>/dev/null)
check "stdin with -" "user [REDACTED:EMAIL] paid with ***************2875" "$OUT"
OUT=$("$AIRLOCK" scan --redact < "$WORK/pii.txt" 2>/dev/null)
check "stdin by default" "user [REDACTED:EMAIL] paid with ***************2875" "$OUT"

run --json --redact "$WORK/key.txt"
check "private key blocks: exit 3" 3 "$RC"
check "blocked: no redacted text" "True False" "$(json_field "$OUT" 'str(d["blocked"]) + " " + str("redacted" in d)')"
run --redact "$WORK/key.txt"
check "blocked: nothing on stdout" "" "$OUT"

printf 'auth Zm9vOlRyMHViNGRvciYzOngveQ== next\n' > "$WORK/literal.txt"
run --json --literal 'Tr0ub4dor&3:x/y' "$WORK/literal.txt"
check "literal found in base64" "['literal_base64']" "$(json_field "$OUT" '[f["detector"] for f in d["findings"]]')"
SECRET_VALUE='Tr0ub4dor&3:x/y' run --json --literal-env SECRET_VALUE "$WORK/literal.txt"
check "literal from the environment" "['literal_base64']" "$(json_field "$OUT" '[f["detector"] for f in d["findings"]]')"

printf '{"note": "key \\u0041KIAUP6PPB2TDBM72FQO"}' > "$WORK/escaped.json"
run --json "$WORK/escaped.json"
check "json input: escaped key found" "aws_access_key_id 14 39" \
  "$(json_field "$OUT" 'd["findings"][0]["detector"] + " " + str(d["findings"][0]["start"]) + " " + str(d["findings"][0]["end"])')"

printf '\xff\xfe jane.doe@example.org \xc3\x28\n' > "$WORK/binary.txt"
run --json --redact "$WORK/binary.txt"
check "invalid UTF-8: found and printed as JSON" "1 email" "$RC $(json_field "$OUT" 'd["findings"][0]["detector"]')"

cat > "$WORK/allow.yaml" <<'YAML'
apiVersion: airlock.dev/v1
kind: DlpPolicy
spec:
  detectors:
    email: {action: allow}
    credit_card: {enabled: false}
YAML
run --policy "$WORK/allow.yaml" "$WORK/pii.txt"
check "policy: allowed findings exit 0" 0 "$RC"
check "policy: allowed finding still listed" 1 "$(printf '%s\n' "$OUT" | grep -c 'action allow')"

printf 'apiVersion: airlock.dev/v1\nkind: DlpPolicy\nspec:\n  detectors:\n    emial: {action: hash}\n' > "$WORK/bad.yaml"
run --policy "$WORK/bad.yaml" "$WORK/pii.txt"
check "bad policy exits 2" 2 "$RC"
check "bad policy names file and line" "airlock scan: $WORK/bad.yaml:5: spec.detectors.emial: unknown detector (docs/dlp.md lists them)" "$ERR"

run "$WORK/missing.txt"
check "unreadable input exits 2" 2 "$RC"
run --literal abc "$WORK/pii.txt"
check "too-short literal exits 2" 2 "$RC"
"$AIRLOCK" scan --no-such-flag >/dev/null 2>&1
check "usage error exits 2" 2 "$?"

if ((failures > 0)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all checks passed"
