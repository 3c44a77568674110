#!/usr/bin/env bash
# `airlock run` through the real binary: exit statuses, --json, options.
set -u
AIRLOCK=$1
fails=0
check() {  # check NAME EXPECTED ACTUAL
  if [[ "$2" == "$3" ]]; then echo "ok   $1"; else echo "FAIL $1: expected [$2], got [$3]"; fails=$((fails + 1)); fi
}
contains() {  # contains NAME NEEDLE HAYSTACK
  if [[ "$3" == *"$2"* ]]; then echo "ok   $1"; else echo "FAIL $1: [$2] not in [$3]"; fails=$((fails + 1)); fi
}
tmp=$(mktemp -d); chmod 755 "$tmp"; trap 'rm -rf "$tmp"' EXIT

out=$("$AIRLOCK" run -- /bin/echo hello); check "passes stdout through" "hello" "$out"
"$AIRLOCK" run -- /bin/sh -c 'exit 7'; check "child's exit code" 7 $?
"$AIRLOCK" run -- /bin/sh -c 'kill -TERM $$'; check "128+signal" 143 $?
"$AIRLOCK" run --timeout 300ms -- /bin/sleep 10 2>/dev/null; check "timeout is 124" 124 $?
err=$("$AIRLOCK" run -- /no/such/cmd 2>&1); rc=$?
check "setup error is 125" 125 $rc
contains "setup error names the command" "/no/such/cmd" "$err"
"$AIRLOCK" run --memory lots -- /bin/true 2>/dev/null; check "bad size is a setup error" 125 $?
"$AIRLOCK" run --no-such-flag -- /bin/true 2>/dev/null; check "unknown flag is a usage error" 2 $?

json=$("$AIRLOCK" run --json -- /bin/sh -c 'echo out; echo err >&2; exit 3')
check "--json exit status" 3 $?
keys=$(python3 -c 'import json,sys; print(" ".join(sorted(json.loads(sys.argv[1]))))' "$json")
check "--json has the documented fields" "egress exit_code message signal stderr stderr_discarded_bytes stderr_truncated stdout stdout_discarded_bytes stdout_truncated syscall usage verdict" "$keys"
fields=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["verdict"], d["exit_code"], repr(d["stdout"]), repr(d["stderr"]), sorted(d["usage"]))' "$json")
check "--json values" "exit_nonzero 3 'out\n' 'err\n' ['cpu_sys_ms', 'cpu_user_ms', 'memory_peak_bytes', 'pids_peak', 'wall_ms']" "$fields"

echo "from a file" >"$tmp/in.txt"; chmod 644 "$tmp/in.txt"
out=$("$AIRLOCK" run --stdin "$tmp/in.txt" -- /bin/cat); check "--stdin FILE" "from a file" "$out"
out=$(echo "from a pipe" | "$AIRLOCK" run --stdin - -- /bin/cat); check "--stdin -" "from a pipe" "$out"
out=$("$AIRLOCK" run -- /bin/cat </dev/null); check "no stdin unless asked" "" "$out"
out=$(AIRLOCK_SECRET=leak "$AIRLOCK" run --env A=1 --env B=two -- /usr/bin/env | sort | tr '\n' ' ')
check "--env and nothing else" "A=1 B=two HOME=/work LANG=C.UTF-8 PATH=/usr/local/bin:/usr/bin:/bin " "$out"
echo data >"$tmp/f"; chmod 644 "$tmp/f"
out=$("$AIRLOCK" run --ro "$tmp:/in" -- /bin/cat /in/f); check "--ro PATH:DEST" "data" "$out"
chmod 777 "$tmp"
"$AIRLOCK" run --rw "$tmp" -- /bin/sh -c "echo new > $tmp/g"; check "--rw PATH" "new" "$(cat "$tmp/g")"
out=$("$AIRLOCK" run --workdir /srv/app -- /bin/sh -c 'pwd; echo $HOME'| tr '\n' ' ')
check "--workdir" "/srv/app /srv/app " "$out"
out=$(cd "$tmp" && "$AIRLOCK" run -- /bin/ls "$tmp" 2>&1); contains "cwd is not bound" "No such file" "$out"
v=$("$AIRLOCK" run --json --memory 64M -- python3 -c 'x = bytearray(1 << 30)' | python3 -c 'import json,sys; print(json.load(sys.stdin)["verdict"])')
check "--memory" "memory_limit" "$v"
v=$("$AIRLOCK" run --json --pids 8 -- python3 -c '
import os
n = 0
try:
    while n < 100:
        if os.fork() == 0:
            import time; time.sleep(10); os._exit(0)
        n += 1
except OSError:
    pass
print(n)' | python3 -c 'import json,sys; print(json.load(sys.stdin)["stdout"].strip())')
check "--pids" "7" "$v"
v=$("$AIRLOCK" run --json --output-limit 10 -- /bin/echo 0123456789abcdef | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["verdict"], d["stdout"], d["stdout_discarded_bytes"])')
check "--output-limit" "output_limit 0123456789 7" "$v"
v=$("$AIRLOCK" run --json --disk 1M -- /bin/sh -c 'head -c 2000000 /dev/zero > /tmp/x; echo $?' | python3 -c 'import json,sys; print(json.load(sys.stdin)["stdout"].strip())')
check "--disk" "1" "$v"
v=$("$AIRLOCK" run --json --nofile 10 -- python3 -c '
files = []
try:
    while True: files.append(open("/dev/null"))
except OSError: print(len(files))' | python3 -c 'import json,sys; print(json.load(sys.stdin)["stdout"].strip())')
check "--nofile" "7" "$v"
v=$("$AIRLOCK" run --json --cpu-time 500ms -- python3 -c 'while True: pass' | python3 -c 'import json,sys; print(json.load(sys.stdin)["verdict"])')
check "--cpu-time" "cpu_time_limit" "$v"
"$AIRLOCK" doctor >/dev/null; check "doctor says the sandbox can run" 0 $?

# Egress options: a loopback web server, reached only as allowed.
mkdir -p "$tmp/www"; echo "egress ok" >"$tmp/www/index.html"; chmod -R a+rX "$tmp/www"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
(cd "$tmp/www" && exec python3 -m http.server "$port" --bind 127.0.0.1 >/dev/null 2>&1) &
server=$!
for _ in $(seq 50); do curl -s "http://127.0.0.1:$port/" >/dev/null 2>&1 && break; sleep 0.1; done
out=$("$AIRLOCK" run --allow "web.test:$port" --resolve web.test=127.0.0.1 -- curl -sS "http://web.test:$port/index.html")
check "--allow with --resolve" "egress ok" "$out"
out=$("$AIRLOCK" run --json --allow "web.test:$port" -- curl -sS "http://127.0.0.1:$port/" | python3 -c 'import json,sys; d=json.load(sys.stdin); e=d["egress"][0]; print(e["allowed"], e["host"])')
check "an IP not on the list is denied and recorded" "False 127.0.0.1" "$out"
out=$("$AIRLOCK" run --forward "8080=127.0.0.1:$port" -- curl -sS http://127.0.0.1:8080/index.html)
check "--forward" "egress ok" "$out"
"$AIRLOCK" run --allow 'bad name' -- /bin/true 2>/dev/null; check "a bad rule is a setup error" 125 $?
kill $server 2>/dev/null
((fails == 0)) && echo "all cli checks passed" || echo "$fails cli checks failed"
exit $((fails > 0))
