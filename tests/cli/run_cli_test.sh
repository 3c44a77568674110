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
check "--json values" "exit_nonzero 3 'out\n' 'err\n' ['cpu_sys_ms', 'cpu_user_ms', 'memory_peak_bytes', 'pids_limit_hit', 'pids_peak', 'wall_ms']" "$fields"

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
doctor=$("$AIRLOCK" doctor); check "doctor says the sandbox can run" 0 $?
contains "doctor tries a terminal" "ok    terminal (devpts new instance, for --tty)" "$doctor"
contains "doctor checks lo" "loopback segments (for egress throughput)" "$doctor"

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
# --tty: a pty of the sandbox's own; refused where a terminal makes no sense.
err=$("$AIRLOCK" run --tty --json -- /bin/true 2>&1); rc=$?
check "--tty --json is refused" 125 $rc
contains "--tty --json says why" "--tty cannot be combined with --json" "$err"
err=$("$AIRLOCK" run --tty --stdin - -- /bin/true 2>&1 </dev/null); rc=$?
check "--tty --stdin is refused" 125 $rc
contains "--tty --stdin says why" "--tty cannot be combined with --stdin" "$err"
out=$("$AIRLOCK" run --tty -- tty </dev/null | od -An -c | tr -s ' ')
check "--tty: tty names the new instance's pty" " / d e v / p t s / 0 \r \n" "$out"
out=$("$AIRLOCK" run -- tty </dev/null); check "no terminal without --tty" "not a tty" "$out"
out=$(echo hello | "$AIRLOCK" run --tty -- python3 -c 'print(input().upper())' | tr -d '\r' | tr '\n' ' ')
check "--tty: piped input is typed and echoed" "hello HELLO " "$out"
out=$("$AIRLOCK" run --tty --output-limit 10 -- /bin/echo 0123456789abcdef 2>"$tmp/err" </dev/null)
check "--tty: output limit" "0123456789" "$out"
contains "--tty: output limit is reported" "output_limit" "$(cat "$tmp/err")"
# From a real terminal (a pty of the test's): window size, raw mode, resize, restore.
here=$(cd "$(dirname "$0")" && pwd)
while read -r line; do
  [[ $line == ok* ]] && echo "$line" || { echo "$line"; fails=$((fails + 1)); }
done < <(python3 "$here/tty_session.py" "$AIRLOCK" 2>&1)
while read -r line; do
  [[ $line == ok* ]] && echo "$line (unprivileged)" || { echo "$line (unprivileged)"; fails=$((fails + 1)); }
done < <("$here/../run-unprivileged.sh" --no-cgroup /usr/bin/python3 "$here/tty_session.py" "$AIRLOCK" 2>&1)

# The sandbox's pid 1 is a fork of airlock: /proc/1/cmdline shows nothing of airlock's host
# command line (here a distinctive host directory), as root and as an unprivileged user.
mkdir -p "$tmp/host-secret-dir-4711"; chmod 755 "$tmp/host-secret-dir-4711"
for as in root unprivileged; do
  run_as=(); [[ $as == unprivileged ]] && run_as=("$here/../run-unprivileged.sh" --no-cgroup)
  out=$("${run_as[@]}" "$AIRLOCK" run --ro "$tmp/host-secret-dir-4711:/in" -- /bin/cat /proc/1/cmdline |
        tr '\0' ' ' | tr -s ' ')
  check "/proc/1/cmdline hides the host command line ($as)" "airlock-init " "$out"
done

# ^C, a kill or a hang-up stops the sandbox and removes it, then airlock dies of the signal;
# with --audit the stopped run is still recorded.
our_cgroups() {  # every cgroup directory a process with pid $1 would have made
  find /sys/fs/cgroup -maxdepth 6 -type d -name "airlock-$1-*" 2>/dev/null | sort | tr '\n' ' '
}
# (A script's background jobs start with SIGINT and SIGQUIT ignored; a user's ^C is not.)
default_signals=(python3 -c 'import os, signal, sys
for s in (signal.SIGINT, signal.SIGQUIT): signal.signal(s, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])')
for sig in INT TERM HUP; do
  "${default_signals[@]}" "$AIRLOCK" run -- /bin/sleep 31.25 2>"$tmp/sig.err" & pid=$!
  for _ in $(seq 200); do pgrep -f "^/bin/sleep 31.25$" >/dev/null && break; sleep 0.02; done
  kill -$sig $pid; wait $pid; rc=$?
  check "SIG$sig: airlock dies of it" $((128 + $(kill -l $sig))) $rc
  contains "SIG$sig: says so" "SIG$sig: stopped the sandbox" "$(cat "$tmp/sig.err")"
  check "SIG$sig: no cgroup left" "" "$(our_cgroups $pid)"
  check "SIG$sig: no process left" "" "$(pgrep -f '^/bin/sleep 31.25$')"
done
"${default_signals[@]}" "$AIRLOCK" run --audit "$tmp/stopped.db" -- /bin/sleep 31.5 2>/dev/null & pid=$!
for _ in $(seq 200); do pgrep -f "^/bin/sleep 31.5$" >/dev/null && break; sleep 0.02; done
kill -INT $pid; wait $pid
contains "SIGINT with --audit: the stopped run is recorded" "1 records" "$("$AIRLOCK" audit verify "$tmp/stopped.db" 2>&1)"
check "SIGINT with --audit: no cgroup left" "" "$(our_cgroups $pid)"
# A signal airlock was started with ignored (nohup) stays ignored.
(trap '' HUP; exec "$AIRLOCK" run -- /bin/sleep 31.75 2>/dev/null) & pid=$!
for _ in $(seq 200); do pgrep -f "^/bin/sleep 31.75$" >/dev/null && break; sleep 0.02; done
kill -HUP $pid; sleep 0.3
check "an ignored SIGHUP stays ignored" "running" "$(kill -0 $pid 2>/dev/null && echo running)"
kill -TERM $pid; wait $pid
check "then SIGTERM stops it" 143 $?
check "then no cgroup is left" "" "$(our_cgroups $pid)"
# A cgroup of an earlier airlock that had our pid and was SIGKILLed (pids are reused) does
# not stop the run, and is gone afterwards.
pids_base=/sys/fs/cgroup/pids$(sed -n 's/^[0-9]*:pids://p' /proc/self/cgroup)
if [[ -w $pids_base ]]; then
  out=$(sh -c 'mkdir "$1/airlock-$$-0" && echo $$ && exec "$2" run -- /bin/echo ran' sh "$pids_base" "$AIRLOCK")
  stale_pid=${out%%$'\n'*}
  check "a stale cgroup with our name is replaced" "ran" "${out#*$'\n'}"
  check "a stale cgroup with our name is removed" "" "$(our_cgroups "$stale_pid")"
fi

# `airlock` holds run and doctor; it executes airlock-tools for the other commands and for
# run --audit (in either spelling), passing argv on.
help=$("$AIRLOCK" --help)
for command in run doctor serve validate scan audit call tools; do
  contains "--help lists $command" "$command" "$help"
done
contains "a forwarded command's usage names airlock" "airlock validate" "$("$AIRLOCK" validate --help)"
out=$(echo 'eval("1")' | "$AIRLOCK" validate - 2>&1); rc=$?
check "validate runs (through airlock-tools)" 1 $rc
"$AIRLOCK" run --audit="$tmp/a.db" -- /bin/true; check "run --audit=PATH" 0 $?
contains "run --audit=PATH recorded the run" "1 records" "$("$AIRLOCK" audit verify "$tmp/a.db" 2>&1)"
mkdir "$tmp/alone"; cp "$AIRLOCK" "$tmp/alone/airlock"
err=$("$tmp/alone/airlock" scan --help 2>&1); rc=$?
check "without airlock-tools beside it: 125" 125 $rc
contains "without airlock-tools beside it: says so" "airlock-tools" "$err"
out=$("$tmp/alone/airlock" run -- /bin/echo alone); check "run needs no airlock-tools" "alone" "$out"

((fails == 0)) && echo "all cli checks passed" || echo "$fails cli checks failed"
exit $((fails > 0))
