#!/usr/bin/env bash
# Boots the pure cgroup v2 test host and runs one part of tests/vm/guest-suite.sh inside it.
#   tests/vm/run-vm.sh BUILD_DIR PART [TIMEOUT_SECONDS]
# The VM: Debian's kernel (tests/vm/fetch-kernel.sh, from scripts/install-deps.sh) with
# cgroup_no_v1=all, so that its only hierarchy is v2 with every controller, under QEMU's TCG
# (KVM does not work on these machines); an initramfs of busybox-static built here; the host's
# / read-only over 9p as its root (the build tree is read where it is); tmpfs where the tests
# write; the console on our stdout; the suite's exit status back through a second, writable
# 9p share. Exits with that status; 1 if the VM never reported one.
set -euo pipefail
build_dir=$(cd "$1" && pwd) part=$2 limit=${3:-900}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${AIRLOCK_VM_CACHE:-/var/cache/airlock-vm}

kernel_dir=$(ls -d "$cache"/*/ 2>/dev/null | sort -V | tail -1)
if [[ -z $kernel_dir || ! -f $kernel_dir/vmlinuz ]]; then
  echo "run-vm: no kernel in $cache: run scripts/install-deps.sh (tests/vm/fetch-kernel.sh)" >&2
  exit 1
fi
command -v qemu-system-x86_64 >/dev/null || { echo "run-vm: qemu-system-x86 is missing" >&2; exit 1; }
if [[ $(id -u) -ne 0 ]]; then echo "run-vm: needs root (the guest's root is the host's /)" >&2; exit 1; fi

# The unprivileged parts run as this user; /etc is read-only in the guest, so it is made here
# (as tests/run-unprivileged.sh does on the host).
if ! id -u airlock-test >/dev/null 2>&1; then
  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin airlock-test
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/results"
"$here/make-initramfs.sh" "$kernel_dir" "$work/initramfs"

started=$(date +%s%N)
set +e
timeout --kill-after=10 "$limit" qemu-system-x86_64 \
  -accel tcg -cpu max -smp 2 -m 12G -nographic -no-reboot -monitor none -nic none \
  -kernel "$kernel_dir/vmlinuz" -initrd "$work/initramfs" \
  -append "console=ttyS0 quiet panic=-1 cgroup_no_v1=all AIRLOCK_VM_STAGE2=$here/guest-init.sh AIRLOCK_VM_SUITE=$here/guest-suite.sh AIRLOCK_VM_ARGS=$build_dir,$part" \
  -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
  -virtfs local,path="$work/results",mount_tag=results,security_model=none </dev/null
qemu_status=$?
set -e
elapsed_ms=$((($(date +%s%N) - started) / 1000000))
elapsed="$((elapsed_ms / 1000)).$(printf %03d $((elapsed_ms % 1000)))"
if [[ ! -s $work/results/status ]]; then
  echo "run-vm: the VM reported no status (qemu exited $qemu_status after ${elapsed}s; timeout ${limit}s)" >&2
  exit 1
fi
status=$(cat "$work/results/status")
echo "run-vm: part '$part' exited $status; the VM ran ${elapsed}s (boot included)"
exit "$status"
