#!/usr/bin/env bash
# Builds the test VM's initramfs: busybox-static, the modules the kernel cache holds
# (tests/vm/fetch-kernel.sh) and tests/vm/initramfs-init as /init, packed as a newc cpio.
#   tests/vm/make-initramfs.sh KERNEL_DIR OUT
set -euo pipefail
kernel_dir=$1 out=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
busybox=/bin/busybox
[[ -x $busybox ]] && file -L "$busybox" 2>/dev/null | grep -q static ||
  [[ $($busybox 2>&1 | head -1) == BusyBox* ]] || { echo "make-initramfs: no busybox (busybox-static)" >&2; exit 1; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bin" "$root/modules"
cp "$busybox" "$root/bin/busybox"
cp "$kernel_dir"/modules/*.ko "$kernel_dir/modules/order" "$root/modules/"
cp "$here/initramfs-init" "$root/init"
chmod 755 "$root/init" "$root/bin/busybox"
(cd "$root" && find . | LC_ALL=C sort | "$busybox" cpio -o -H newc 2>/dev/null) >"$out.tmp"
mv "$out.tmp" "$out"
