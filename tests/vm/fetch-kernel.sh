#!/usr/bin/env bash
# Puts Debian's kernel for the pure cgroup v2 test VM (tests/vm) into a cache directory: the
# package linux-image-amd64 depends on is downloaded with apt-get and unpacked with dpkg-deb,
# never installed (nothing goes into /boot, no initramfs or boot loader hook runs). Kept: the
# kernel image and the modules the VM's initramfs loads to mount the host over 9p.
#   tests/vm/fetch-kernel.sh [CACHE]      (default: $AIRLOCK_VM_CACHE or /var/cache/airlock-vm)
# Does nothing when the cache already holds a kernel. Needs root (apt-get) on a fresh machine.
set -euo pipefail
cache=${1:-${AIRLOCK_VM_CACHE:-/var/cache/airlock-vm}}
if compgen -G "$cache/*/vmlinuz" >/dev/null; then exit 0; fi

# The modules, in load order (virtio PCI transport, then 9p over virtio).
modules=(virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci
         netfs fscache 9pnet 9pnet_virtio 9p)

package=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}')
if [[ -z $package ]]; then
  apt-get update -qq
  package=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-/ {print $2; exit}')
fi
[[ -n $package ]] || { echo "fetch-kernel: no linux-image-amd64 in the apt lists" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "fetch-kernel: downloading $package (unpacked into $cache, not installed)"
# apt's download sandbox user cannot write into a root-only temp directory.
chmod 755 "$work"; if id -u _apt >/dev/null 2>&1; then chown _apt "$work"; fi
(cd "$work" && apt-get download -qq "$package")
dpkg-deb -x "$work"/"$package"_*.deb "$work/root"
version=${package#linux-image-}
dest="$cache/$version"
mkdir -p "$dest.tmp/modules"
cp "$work/root/boot/vmlinuz-$version" "$dest.tmp/vmlinuz"
for m in "${modules[@]}"; do
  found=$(find "$work/root/lib/modules/$version/kernel" -name "$m.ko" -print -quit)
  [[ -n $found ]] || { echo "fetch-kernel: $m.ko is not in $package" >&2; exit 1; }
  cp "$found" "$dest.tmp/modules/"
done
printf '%s\n' "${modules[@]}" >"$dest.tmp/modules/order"
rm -rf "$dest"
mv "$dest.tmp" "$dest"
echo "fetch-kernel: $dest"
