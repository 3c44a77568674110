#!/bin/sh
# Issue #37: does `runsc checkpoint` / `runsc restore` work here (this kernel, this runsc, the
# ptrace platform) for a detached sandbox holding 100 MiB? Prints each step's exit code and
# time, and whether the restored process still holds its memory. Run as root:
#   sh bench/gvisor/checkpoint_restore.sh [runsc]
# The bundle is the minimal one of a gVisor call (read-only root, /usr bound read-only, uid
# 1000, no capabilities); --network=none so that runsc's control socket is reachable from here.
set -u
RUNSC=${1:-runsc}
DIR=$(mktemp -d /tmp/airlock-ckpt.XXXXXX)
trap 'for c in held restored; do $R delete --force $c >/dev/null 2>&1; done; rm -rf "$DIR"' EXIT
mkdir -p "$DIR/bundle/rootfs" "$DIR/state" "$DIR/image"
for l in bin lib lib64 sbin; do [ -L /$l ] && ln -s "$(readlink /$l)" "$DIR/bundle/rootfs/$l"; done
cat > "$DIR/bundle/config.json" <<'JSON'
{"ociVersion":"1.0.0",
 "process":{"user":{"uid":1000,"gid":1000},
  "args":["/usr/bin/python3","-c","import os,time\nb=bytearray(os.urandom(100*1024*1024))\nwhile True: time.sleep(0.1)"],
  "env":["PATH=/usr/bin:/bin"],"cwd":"/tmp",
  "capabilities":{"bounding":[],"effective":[],"inheritable":[],"permitted":[],"ambient":[]},
  "noNewPrivileges":true},
 "root":{"path":"rootfs","readonly":true},"hostname":"ckpt",
 "mounts":[{"destination":"/proc","type":"proc","source":"proc"},
  {"destination":"/usr","type":"bind","source":"/usr","options":["rbind","ro"]},
  {"destination":"/tmp","type":"tmpfs","source":"tmpfs","options":["size=64m"]}],
 "linux":{"namespaces":[{"type":"pid"},{"type":"ipc"},{"type":"uts"},{"type":"mount"}]}}
JSON
R="$RUNSC --root=$DIR/state --platform=ptrace --ignore-cgroups --network=none"
step() {  # name, command...: runs it with no terminal, prints its exit code and ms
  name=$1; shift
  t0=$(date +%s%N)
  timeout 120 "$@" </dev/null >"$DIR/$name.out" 2>&1
  rc=$?
  echo "$name: exit $rc, $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  [ $rc -eq 0 ] || sed 's/^/    /' "$DIR/$name.out" | head -5
}
echo "runsc: $($RUNSC --version | head -1); kernel $(uname -r)"
step run $R run --detach --bundle "$DIR/bundle" held
sleep 4  # the 100 MiB of random bytes is made
step rss_before $R exec held sh -c 'grep VmRSS /proc/1/status'; cat "$DIR/rss_before.out"
step pause $R pause held
step checkpoint $R checkpoint --image-path="$DIR/image" held
echo "image: $(du -sh "$DIR/image" | cut -f1)"
step delete_paused $R delete --force held
step restore $R restore --detach --image-path="$DIR/image" --bundle "$DIR/bundle" restored
step first_exec_after_restore $R exec restored sh -c 'grep VmRSS /proc/1/status'; cat "$DIR/first_exec_after_restore.out"
