#!/usr/bin/env bash
# `airlock validate` through the real binary: exit codes, options, JSON and SARIF output.
set -u
AIRLOCK=$1
BENIGN=$2
fails=0
check() {  # check NAME EXPECTED ACTUAL
  if [[ "$2" == "$3" ]]; then echo "ok   $1"; else echo "FAIL $1: expected [$2], got [$3]"; fails=$((fails + 1)); fi
}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

printf 'import json\nprint(json.dumps([1]))\n' >"$tmp/ok.py"
printf 'import os\nos.system("id")\n' >"$tmp/bad.py"
printf 'import urllib.request\nurllib.request.urlopen("https://api.example.com/x")\n' >"$tmp/net.py"

"$AIRLOCK" validate "$tmp/ok.py" >/dev/null; check "accept exits 0" 0 $?
"$AIRLOCK" validate "$tmp/bad.py" >/dev/null; check "reject exits 1" 1 $?
"$AIRLOCK" validate "$tmp/missing.py" 2>/dev/null; check "unreadable file exits 2" 2 $?
"$AIRLOCK" validate --format yaml "$tmp/ok.py" 2>/dev/null; check "bad format exits 2" 2 $?
"$AIRLOCK" validate --no-such-flag "$tmp/ok.py" 2>/dev/null; check "unknown flag exits 2" 2 $?
"$AIRLOCK" validate --policy "$tmp/missing.yaml" "$tmp/ok.py" 2>/dev/null; check "missing policy exits 2" 2 $?
printf 'apiVersion: airlock.dev/v1\nkind: ValidationPolicy\nspec:\n  imprts: [os]\n' >"$tmp/badpolicy.yaml"
err=$("$AIRLOCK" validate --policy "$tmp/badpolicy.yaml" "$tmp/ok.py" 2>&1); rc=$?
check "bad policy exits 2" 2 $rc
check "bad policy error names file:line" "yes" "$([[ $err == *badpolicy.yaml:4:* ]] && echo yes || echo "$err")"
"$AIRLOCK" validate - <"$tmp/ok.py" >/dev/null; check "stdin" 0 $?

"$AIRLOCK" validate "$tmp/net.py" >/dev/null; check "host and import not allowed by default" 1 $?
"$AIRLOCK" validate --allow-import urllib.request "$tmp/net.py" >/dev/null
check "--allow-import alone: host still refused" 1 $?
"$AIRLOCK" validate --allow-import urllib.request --allow-host api.example.com "$tmp/net.py" >/dev/null
check "--allow-import and --allow-host" 0 $?
"$AIRLOCK" validate --allow-import os "$tmp/bad.py" >/dev/null; check "allowing os does not allow os.system" 1 $?

json=$("$AIRLOCK" validate --format json "$tmp/bad.py")
check "json shape" "reject ['col', 'line', 'message', 'rule', 'severity']" \
  "$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["verdict"], sorted(d["findings"][0]))' "$json")"
check "json rules" "import-not-allowed process-exec" \
  "$(python3 -c 'import json,sys; print(" ".join(sorted({f["rule"] for f in json.loads(sys.argv[1])["findings"]})))' "$json")"

sarif=$("$AIRLOCK" validate --format sarif "$tmp/bad.py")
check "sarif structure" "ok" "$(python3 - "$sarif" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
assert d["version"] == "2.1.0" and "sarif-2.1.0" in d["$schema"]
run = d["runs"][0]
driver = run["tool"]["driver"]
assert driver["name"] and driver["rules"]
ids = {r["id"] for r in driver["rules"]}
assert run["results"]
for r in run["results"]:
    assert r["ruleId"] in ids and r["level"] in ("error", "warning") and r["message"]["text"]
    region = r["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] >= 1 and region["startColumn"] >= 1
    assert driver["rules"][r["ruleIndex"]]["id"] == r["ruleId"]
print("ok")
PY
)"

bad=0
for f in "$BENIGN"/*.py; do
  "$AIRLOCK" validate --policy "$BENIGN/policy.yaml" "$f" >/dev/null || { echo "     rejected: $f"; bad=$((bad + 1)); }
done
check "benign corpus through the CLI" 0 $bad

echo "validate CLI: $fails failed"
exit $((fails > 0))
