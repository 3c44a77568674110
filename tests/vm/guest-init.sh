#!/bin/bash
# Pid 1 of the test VM once the initramfs has switch_rooted into the host's / (read-only, 9p):
# mounts what a pure cgroup v2 host has (/proc, /sys, /dev, the unified hierarchy as systemd
# mounts it, tmpfs where a test writes), runs $AIRLOCK_VM_SUITE, leaves its exit status in the
# results share and powers off. Its output goes to the serial console, which run-vm.sh prints.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
set -u
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts -o newinstance,ptmxmode=0666 devpts /dev/pts
ln -sf pts/ptmx /dev/ptmx
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
# As systemd mounts it: namespaces are delegation boundaries.
mount -t cgroup2 -o nsdelegate,memory_recursiveprot cgroup2 /sys/fs/cgroup
# A tree below a directory the tmpfs mounts cover (a clone in /tmp) stays visible: the source
# and build trees are bound aside first and moved back onto the tmpfs after.
suite=${AIRLOCK_VM_SUITE:-}
args=${AIRLOCK_VM_ARGS:-}
keep=("${suite%/tests/vm/guest-suite.sh}" "${args%%,*}")
held=()
for path in "${keep[@]}"; do
  case $path in /tmp/*|/var/tmp/*|/run/*|/root/*) ;; *) continue ;; esac
  holder=/dev/airlock-keep/${#held[@]}
  mkdir -p "$holder" && mount --bind "$path" "$holder" && held+=("$path")
done
for dir in /tmp /var/tmp /run /root; do mount -t tmpfs -o mode=1777 tmpfs "$dir"; done
for i in "${!held[@]}"; do
  mkdir -p "${held[$i]}" && mount --move "/dev/airlock-keep/$i" "${held[$i]}"
done
chmod 700 /root
mkdir -p /run/airlock-vm
mount -t 9p -o trans=virtio,version=9p2000.L results /run/airlock-vm
ip link set lo up 2>/dev/null || busybox ip link set lo up
hostname airlock-vm

status=1
if [[ -n ${AIRLOCK_VM_SUITE:-} ]]; then
  bash "$AIRLOCK_VM_SUITE" ${AIRLOCK_VM_ARGS:+${AIRLOCK_VM_ARGS//,/ }}
  status=$?
fi
echo "$status" >/run/airlock-vm/status
sync
echo o >/proc/sysrq-trigger
sleep 10
