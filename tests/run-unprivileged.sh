#!/usr/bin/env bash
# Runs a command as an unprivileged user, the way Airlock runs for most users: a system user
# (created here when missing) that owns a cgroup subtree delegated to it by root, as an
# administrator does with chown on cgroup v1 or systemd's Delegate=yes on v2.
#   tests/run-unprivileged.sh [--no-cgroup] CMD [ARGS...]
# Already unprivileged: runs CMD as is. The delegated cgroups are removed afterwards.
set -euo pipefail
delegate=1
if [[ ${1:-} == --no-cgroup ]]; then delegate=0; shift; fi
if [[ $(id -u) -ne 0 ]]; then exec "$@"; fi

user=airlock-test
if ! id -u "$user" >/dev/null 2>&1; then
  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$user"
fi

declare -a made=() homes=()
cleanup() {
  local i
  for i in "${!made[@]}"; do
    echo $$ >"${homes[$i]}/cgroup.procs" 2>/dev/null || true
    rmdir "${made[$i]}" 2>/dev/null || true
  done
}
trap cleanup EXIT

export AIRLOCK_TEST_EXPECT_UID=unprivileged
export AIRLOCK_TEST_EXPECT_CGROUP=none
if ((delegate)); then
  # Our own cgroup in each v1 hierarchy that limits or measures a sandbox. (On a pure v2
  # host, delegation is systemd's job: run under `systemd-run --user -p Delegate=yes`.)
  while IFS=: read -r _ controllers path; do
    for c in memory pids cpuacct; do
      [[ ",$controllers," == *",$c,"* ]] || continue
      mnt=$(awk -v c="$c" '$9 == "cgroup" && ("," $NF ",") ~ ("," c ",") {print $5; exit}' /proc/self/mountinfo)
      [[ -n $mnt ]] || continue
      home="$mnt${path%/}"
      dir="$home/airlock-delegated-$$"
      mkdir "$dir"
      chown "$user" "$dir" "$dir/cgroup.procs" "$dir/tasks"
      made+=("$dir"); homes+=("$home")
      echo $$ >"$dir/cgroup.procs"
    done
  done </proc/self/cgroup
fi

limited=0
for d in "${made[@]}"; do [[ -e $d/memory.limit_in_bytes ]] && limited=1; done
((limited)) && export AIRLOCK_TEST_EXPECT_CGROUP=limits

# Not exec: the trap removes the delegated cgroups when the command is done.
setpriv --reuid="$user" --regid="$user" --init-groups --inh-caps=-all -- "$@"
