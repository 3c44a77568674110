#!/bin/bash
# Runs inside the pure cgroup v2 test VM (tests/vm/run-vm.sh): one part of the suite, each
# program in a cgroup of its own as systemd runs a service with Delegate=yes (the hierarchy
# is mounted with nsdelegate, as systemd mounts it).
#   guest-suite.sh BUILD_DIR PART
# PART: sandbox  the sandbox's threat model and the warm templates' as root, and doctor
#       unprivileged  the same (fewer attacks) and the daemon's warm calls as an unprivileged
#                     user with a delegated subtree
#       daemon  the daemon's warm calls end to end
#       bench   bench_startup's cold and warm calls (not a test; docs/performance.md)
set -uo pipefail
build=$1 part=$2
source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cg=/sys/fs/cgroup
echo "airlock-vm: up after $(cut -d' ' -f1 /proc/uptime) s; kernel $(uname -r); cgroup.controllers: $(cat $cg/cgroup.controllers)"

# Every controller for the children of the root and of our slice.
controllers=$(sed 's/\([a-z_]*\)/+\1/g' $cg/cgroup.controllers)
echo "$controllers" >$cg/cgroup.subtree_control
mkdir -p $cg/airlock-vm.slice
echo "$controllers" >$cg/airlock-vm.slice/cgroup.subtree_control

failed=()
# run NAME CMD...: CMD alone in the cgroup airlock-vm.slice/NAME.service, timed.
run() {
  local name=$1; shift
  local dir=$cg/airlock-vm.slice/$name.service start=$(date +%s%N)
  mkdir -p "$dir"
  echo "airlock-vm: == $name: $*" >&2  # stderr: a caller may redirect the program's stdout
  (echo "$BASHPID" >"$dir/cgroup.procs" && exec "$@")
  local status=$? ms=$((($(date +%s%N) - start) / 1000000))
  echo "airlock-vm: == $name exited $status after $((ms / 1000)).$(printf %03d $((ms % 1000))) s" >&2
  ((status == 0)) || failed+=("$name")
  find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null
}

# The threat model on this host. TCG emulates every instruction (the whole attack suite takes
# about 7 minutes here), so a subset: every limit and verdict (what v2 changes), process
# containment and identity, one attack per other layer (files, Landlock, network, seccomp),
# and every warm attack. Left out: the terminal's tests and all but two of the forbidden
# syscalls (neither touches cgroups; the host runs them in every regime), and
# Limits.ForkBombIsContained, whose 2 s wall clock a loaded host's TCG does not fit (the
# process limit is tried deterministically by Limits.ProcessCountStopsAtTheLimit and the warm
# AProcessCountStopsAtTheCallsLimit), and Limits.CpuBudgetCountsEveryProcess, whose bound on
# the overshoot (under 3 s of CPU for a 2 s budget) emulation missed by 2 ms once (the budget
# itself is tried by Limits.CpuSpinHitsTheCpuBudget and the warm ACpuSpinGetsTheVerdictItGetsCold).
attacks='Limits.*:Verdicts.*:Regime.*:Processes.*:Identity.*'
attacks+=':HostFiles.SecretsAndTheCallersDirectoriesAreNotVisible:HostFiles.ReadOnlyBindIsReadableButNotWritable'
attacks+=':HostFiles.LandlockDeniesWritesUnderProc:Network.HostLoopbackListenerIsUnreachable'
attacks+=':AllowedSyscalls.*:ForbiddenSyscallsOtherAbi.*:Attacks/ForbiddenSyscalls.EndTheRunAndAreNamed/0'
attacks+=':Attacks/ForbiddenSyscalls.EndTheRunAndAreNamed/1'
attacks+='-Limits.ForkBombIsContained:Limits.CpuBudgetCountsEveryProcess'
# As an unprivileged user: what delegation changes (limits, verdicts, the regime).
attacks_unprivileged='Limits.*:Verdicts.*:Regime.*:Processes.*-Limits.ForkBombIsContained:Limits.CpuBudgetCountsEveryProcess'
warm_expect="AIRLOCK_TEST_EXPECT_CGROUP=v2-limits AIRLOCK_TEST_EXPECT_WARM=1"
# As ctest runs them: from the test's build directory (an attack reads the caller's cwd).
case $part in
  sandbox)
    cd "$build/tests/sandbox" || exit 1
    # Alone in its cgroup, as the daemon would be (a pipe's other end beside it would be
    # "other processes": doctor says so, and that warm calls would then run cold).
    run doctor "$build/src/cli/airlock" doctor
    run doctor-json "$build/src/cli/airlock" doctor --json >/tmp/doctor.json
    python3 "$source_dir/tests/vm/check-doctor.py" </tmp/doctor.json || failed+=(check-doctor)
    run attacks env $warm_expect "$build/tests/sandbox/sandbox_attack_test" --gtest_filter="$attacks"
    run warm env $warm_expect "$build/tests/sandbox/sandbox_warm_test"
    ;;
  unprivileged)
    cd "$build/tests/sandbox" || exit 1
    run attacks-unprivileged "$source_dir/tests/run-unprivileged.sh" \
      "$build/tests/sandbox/sandbox_attack_test" --gtest_filter="$attacks_unprivileged"
    run warm-unprivileged env AIRLOCK_TEST_EXPECT_WARM=1 "$source_dir/tests/run-unprivileged.sh" \
      "$build/tests/sandbox/sandbox_warm_test"
    # The daemon as a Delegate=yes service with User=: its warm calls must say "warm".
    run warm-daemon-unprivileged "$source_dir/tests/run-unprivileged.sh" \
      "$build/tests/server/warm_daemon_test" \
      --gtest_filter='WarmDaemon.TheFirstCallRunsColdAndSaysSoThenCallsForkFromTheTemplate:WarmDaemon.EveryCallOfAPreparedChildGetsItsOwnArguments'
    ;;
  daemon)
    cd "$build/tests/server" || exit 1
    run warm-daemon "$build/tests/server/warm_daemon_test"
    ;;
  bench)  # not a test: docs/performance.md's warm figures on v2 (TCG: emulated, see there)
    cd "$build" || exit 1
    run bench-startup "$build/bench/bench_startup" --benchmark_filter='BM_ToolCold|BM_ToolWarm'
    ;;
  *) echo "guest-suite: unknown part $part"; exit 2 ;;
esac
if ((${#failed[@]})); then
  echo "airlock-vm: FAILED: ${failed[*]}"
  exit 1
fi
echo "airlock-vm: all passed"
