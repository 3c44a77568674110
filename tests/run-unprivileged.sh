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
v2_delegated=""
cleanup() {
  local i
  for i in "${!made[@]}"; do
    echo $$ >"${homes[$i]}/cgroup.procs" 2>/dev/null || true
    rmdir "${made[$i]}" 2>/dev/null || true
  done
  # v2: the delegated subtree and what the daemon made in it (its supervisor leaf).
  [[ -z $v2_delegated ]] || find "$v2_delegated" -depth -type d -exec rmdir {} + 2>/dev/null || true
}
trap cleanup EXIT

# A pure cgroup v2 host: the subtree systemd's Delegate=yes gives a service, made by hand. Our
# own cgroup holds this shell, so it cannot hand controllers to a child (no process may sit in
# a cgroup whose controllers go to its children, the root's aside): the delegated cgroup is
# made beside ours, under our parent, which hands them to both. Only the command runs in it.
v2_delegation() {
  local own mnt parent
  own=$(awk -F: '$1 == "0" && $2 == "" {print $3}' /proc/self/cgroup)
  mnt=$(awk '$9 == "cgroup2" {print $5; exit}' /proc/self/mountinfo)
  [[ -n $own && -n $mnt ]] || return 1
  grep -qw memory "$mnt${own%/}/cgroup.controllers" 2>/dev/null || return 1
  if [[ $own == / ]]; then parent=$mnt; else parent=$(dirname "$mnt$own"); fi
  v2_delegated="$parent/airlock-delegated-$$"
  mkdir "$v2_delegated"
  chown "$user" "$v2_delegated" "$v2_delegated"/cgroup.{procs,subtree_control,threads}
}

export AIRLOCK_TEST_EXPECT_UID=unprivileged
export AIRLOCK_TEST_EXPECT_CGROUP=none
if ((delegate)) && ! grep -q '^[1-9][0-9]*:[^:]*\(memory\|pids\)' /proc/self/cgroup && v2_delegation; then
  export AIRLOCK_TEST_EXPECT_CGROUP=limits
elif ((delegate)); then
  # Our own cgroup in each v1 hierarchy that limits or measures a sandbox.
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
if [[ -n $v2_delegated ]]; then
  (echo "$BASHPID" >"$v2_delegated/cgroup.procs" &&
    exec setpriv --reuid="$user" --regid="$user" --init-groups --inh-caps=-all -- "$@")
else
  setpriv --reuid="$user" --regid="$user" --init-groups --inh-caps=-all -- "$@"
fi
