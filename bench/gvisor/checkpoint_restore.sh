#!/bin/sh
# Issue #37: does `runsc checkpoint` / `runsc restore` work here (this kernel, this runsc, the
# ptrace platform) for a sandbox holding 100 MiB, and for one arranged as an Airlock gVisor
# session? Prints each step's exit code, time and (on failure) runsc's words. Run as root:
#   sh bench/gvisor/checkpoint_restore.sh [runsc]      (CASES="session nonet" for some)
# Four cases (docs/sessions.md, "Checkpoint and restore on this machine"):
#   bare     the minimal bundle of a gVisor call, --network=none, `runsc run --detach`
#   session  a session's arrangement: a network namespace of its own whose only socket is a
#            listener on 127.0.0.1:3128 (the egress proxy's stand-in), --network=host inside it,
#            a host tmpfs bound over /work, runsc run in the foreground (as GvisorRun runs it)
#   nonet    the session's mounts with --network=none; restored into a new container whose
#            workspace is a new tmpfs holding the old one's files (a new session's directory)
#   netstack the session's namespace with --network=sandbox (gVisor's own network stack)
# What Airlock built from the nonet case is measured by bench/gvisor/session_checkpoint.sh.
set -u
RUNSC=${1:-runsc}
DIR=$(mktemp -d /tmp/airlock-ckpt.XXXXXX)
PIDS=""
cleanup() {
  for s in "$DIR"/*/state; do
    [ -d "$s" ] || continue
    ns=""  # runsc's control socket is in the namespace runsc runs in
    [ -f "${s%/state}/holder" ] && ns="nsenter --net=/proc/$(cat "${s%/state}/holder")/ns/net"
    for c in $($RUNSC --root="$s" list -quiet 2>/dev/null); do
      $ns $RUNSC --root="$s" resume "$c" >/dev/null 2>&1
      $ns $RUNSC --root="$s" delete --force "$c" >/dev/null 2>&1
    done
  done
  for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
  for m in "$DIR"/*/ws; do umount "$m" 2>/dev/null; done
  rm -rf "$DIR"
}
trap cleanup EXIT

step() {  # name, command...: runs it with no terminal, prints its exit code and ms
  name=$1; shift
  t0=$(date +%s%N)
  timeout 120 "$@" </dev/null >"$DIR/$name.out" 2>&1
  rc=$?
  echo "  $name: exit $rc, $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  [ $rc -eq 0 ] || grep -v '^\s*$' "$DIR/$name.out" | tail -2 | sed 's/^/      /'
  return $rc
}

# bundle DIR WORKSPACE NETNS_PATH: a bundle whose init is the 100 MiB Python (bare: no
# WORKSPACE) or `sleep infinity` with the workspace bound over /work.
bundle() {
  mkdir -p "$1/bundle/rootfs" "$1/state" "$1/image"
  for l in bin lib lib64 sbin; do [ -L /$l ] && ln -s "$(readlink /$l)" "$1/bundle/rootfs/$l"; done
  args='"/usr/bin/python3","-c","import os,time\nb=bytearray(os.urandom(100*1024*1024))\nwhile True: time.sleep(0.1)"'
  work=""
  if [ -n "$2" ]; then
    args='"/bin/sleep","infinity"'
    work=',{"destination":"/work","type":"bind","source":"'$2'","options":["rbind","nosuid","nodev","rw"]}'
  fi
  net=""
  [ -n "$3" ] && net=',{"type":"network","path":"'$3'"}'
  cat > "$1/bundle/config.json" <<JSON
{"ociVersion":"1.0.0",
 "process":{"user":{"uid":1000,"gid":1000},"args":[$args],
  "env":["PATH=/usr/bin:/bin"],"cwd":"/tmp",
  "capabilities":{"bounding":[],"effective":[],"inheritable":[],"permitted":[],"ambient":[]},
  "noNewPrivileges":true},
 "root":{"path":"rootfs","readonly":true},"hostname":"ckpt",
 "mounts":[{"destination":"/proc","type":"proc","source":"proc"},
  {"destination":"/usr","type":"bind","source":"/usr","options":["rbind","ro"]},
  {"destination":"/tmp","type":"tmpfs","source":"tmpfs","options":["size=64m"]}$work],
 "linux":{"namespaces":[{"type":"pid"},{"type":"ipc"},{"type":"uts"},{"type":"mount"}$net]}}
JSON
}

workspace() {  # a tmpfs owned by the sandbox's user, as a session's
  mkdir -p "$1" && mount -t tmpfs -o size=256m,mode=0755,uid=1000,gid=1000 tmpfs "$1"
}

# hold R CONTAINER: a Python in the workspace holding 100 MiB, its pid in /work/pid.
hold() {
  cat > "$DIR/hold.json" <<'JSON'
{"user":{"uid":1000,"gid":1000},"cwd":"/work","env":["PATH=/usr/bin:/bin"],
 "args":["sh","-c","python3 -c 'import os,time\nb=bytearray(os.urandom(100<<20))\nopen(\"/work/pid\",\"w\").write(str(os.getpid()))\nwhile True: time.sleep(0.1)' >/dev/null 2>&1 &"],
 "capabilities":{"bounding":[],"effective":[],"inheritable":[],"permitted":[],"ambient":[]},"noNewPrivileges":true}
JSON
  $1 exec --process "$DIR/hold.json" "$2" </dev/null >/dev/null 2>&1
  for _ in $(seq 100); do
    $1 exec "$2" sh -c 'test -s /work/pid && grep VmRSS /proc/$(cat /work/pid)/status' 2>/dev/null |
      awk '/VmRSS/ { kb = $2 } END { exit !(kb > 100000) }' && return 0
    sleep 0.2
  done
  echo "  the 100 MiB process did not come up"; return 1
}

# R CONTAINER LABEL PID OUTPUT: ms until `runsc state` says running; fails if PID (the
# foreground runsc) ends first, printing the end of OUTPUT, or after 60 s.
until_running() {
  t0=$(date +%s%N)
  while [ $(( ($(date +%s%N) - t0) / 1000000 )) -lt 60000 ]; do
    if $1 state "$2" 2>/dev/null | grep -q '"running"'; then
      echo "  $3 (until running): $(( ($(date +%s%N) - t0) / 1000000 )) ms"
      return 0
    fi
    kill -0 "$4" 2>/dev/null || break
    sleep 0.02
  done
  echo "  $3: not running after $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  grep -v '^\s*$' "$5" | tail -2 | sed 's/^/      /'
  return 1
}

bare() {
  echo "bare (--network=none, runsc run --detach):"
  D=$DIR/bare; bundle "$D" "" ""
  R="$RUNSC --root=$D/state --platform=ptrace --ignore-cgroups --network=none"
  step run $R run --detach --bundle "$D/bundle" held || return
  sleep 4  # the 100 MiB of random bytes is made
  step rss_before $R exec held sh -c 'grep VmRSS /proc/1/status' && sed 's/^/      /' "$DIR/rss_before.out"
  step pause $R pause held
  step checkpoint $R checkpoint --image-path="$D/image" held && echo "  image: $(du -sh "$D/image" | cut -f1)"
  step delete_paused $R delete --force held
  step restore $R restore --detach --image-path="$D/image" --bundle "$D/bundle" restored
  step first_exec_after_restore $R exec restored sh -c 'grep VmRSS /proc/1/status' &&
    sed 's/^/      /' "$DIR/first_exec_after_restore.out"
  $R delete --force restored >/dev/null 2>&1  # its control socket's name is the host's to reuse
}

# In a new network namespace with loopback up and a listener on 127.0.0.1:3128, runs
# `runsc --network=$2 run` of bundle $1 in the foreground; the namespace's holder is $!.
run_in_namespace() {
  cat > "$DIR/ns.sh" <<EOF
ip link set lo up
# runsc 20221219 takes a namespace where this file exists for the host's own (the root one)
test -e /proc/sys/net/core/rmem_default && echo "/proc/sys/net/core/rmem_default: present in the namespace"
/usr/bin/python3 -c 'import socket,time
s=socket.socket(); s.bind(("127.0.0.1",3128)); s.listen(8); time.sleep(100000)' &
exec $RUNSC --root=$1/state --platform=ptrace --ignore-cgroups --network=$2 run --bundle $1/bundle held
EOF
  unshare --net sh "$DIR/ns.sh" </dev/null >"$1/run.out" 2>&1 &
  PIDS="$PIDS $!"
  echo $! > "$1/holder"
}

session() {
  echo "session (own network namespace with the proxy's listener, --network=host, workspace bound over /work):"
  D=$DIR/session; mkdir -p "$D"; workspace "$D/ws"; bundle "$D" "$D/ws" ""
  run_in_namespace "$D" host
  R="nsenter --net=/proc/$(cat "$D/holder")/ns/net $RUNSC --root=$D/state --platform=ptrace --ignore-cgroups"
  until_running "$R" held "runsc run" "$(cat "$D/holder")" "$D/run.out" && hold "$R" held || return
  step pause $R pause held
  step checkpoint $R checkpoint --image-path="$D/image" held
  step checkpoint_running $R checkpoint --leave-running --image-path="$D/image2" held
  step resume $R resume held
  step exec_after $R exec held sh -c 'grep VmRSS /proc/$(cat /work/pid)/status' && sed 's/^/      /' "$DIR/exec_after.out"
}

nonet() {
  echo "nonet (the session's mounts, --network=none; restored with a new workspace holding the old one's files):"
  D=$DIR/nonet; mkdir -p "$D"; workspace "$D/ws"; bundle "$D" "$D/ws" ""
  R="$RUNSC --root=$D/state --platform=ptrace --ignore-cgroups --network=none"
  $R run --bundle "$D/bundle" held </dev/null >"$D/run.out" 2>&1 &
  PIDS="$PIDS $!"
  until_running "$R" held "runsc run" $! "$D/run.out" && hold "$R" held || return
  step pause $R pause held
  step checkpoint $R checkpoint --image-path="$D/image" held && echo "  image: $(du -sh "$D/image" | cut -f1)"
  (cd "$D/ws" && tar cf "$D/ws.tar" .)
  step resume $R resume held; step delete $R delete --force held
  N=$DIR/nonet2; mkdir -p "$N"; workspace "$N/ws"; bundle "$N" "$N/ws" ""
  (cd "$N/ws" && tar xpf "$D/ws.tar")
  R2="$RUNSC --root=$N/state --platform=ptrace --ignore-cgroups --network=none"
  $R2 restore --image-path="$D/image" --bundle "$N/bundle" restored </dev/null >"$N/restore.out" 2>&1 &
  PIDS="$PIDS $!"
  until_running "$R2" restored "runsc restore" $! "$N/restore.out" || return
  step first_exec_after_restore $R2 exec restored sh -c 'grep VmRSS /proc/$(cat /work/pid)/status' &&
    sed 's/^/      /' "$DIR/first_exec_after_restore.out"
}

netstack() {
  echo "netstack (the session's namespace, --network=sandbox):"
  D=$DIR/netstack; mkdir -p "$D"; workspace "$D/ws"; bundle "$D" "$D/ws" ""
  run_in_namespace "$D" sandbox
  sleep 3
  grep -v '^\s*$' "$D/run.out" | tail -3 | sed 's/^/      /'
}

echo "runsc: $($RUNSC --version | head -1); kernel $(uname -r)"
for c in ${CASES:-bare session nonet netstack}; do $c; done
