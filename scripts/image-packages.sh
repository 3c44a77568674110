#!/usr/bin/env bash
# The Debian packages Airlock's installed files need at run time, one per line, sorted: the
# packages that own the shared libraries every ELF file under ROOT names in its NEEDED entries
# (each resolved where this Debian 12 host's loader finds it, ldd, then `dpkg -S`), plus what
# runs inside the sandboxes and what the daemon reaches out with. Their own dependencies are
# Debian's to resolve (mmdebstrap, apt-get). Used by scripts/build-image.sh and the Dockerfile, so both images hold the
# same set.
#   scripts/image-packages.sh ROOT     (ROOT: a `cmake --install` tree, e.g. DESTDIR)
# Fails, naming the file, when a library belongs to no package (built here, or copied in by
# hand): an image made without it would fail at its first start instead.
set -euo pipefail
root=${1:?usage: image-packages.sh ROOT}

# Not found through NEEDED entries:
#   python3           the tool runner, the validator's parse worker and the warm templates run
#                     Debian's /usr/bin/python3 in the sandbox (its stdlib: tools import it)
#   ca-certificates   the system trust store: identity providers' JWKS, credential stores and
#                     webhooks over HTTPS, and the egress proxy's upstream TLS
extras=(python3 ca-certificates)

owner() {  # owner FILE: the package that ships FILE (merged /usr: try both spellings)
  local f=$1 candidates=("$1") p
  candidates+=("$(realpath -m "$f")")
  case $f in /usr/*) candidates+=("${f#/usr}") ;; *) candidates+=("/usr$f") ;; esac
  for p in "${candidates[@]}"; do
    if out=$(dpkg-query -S "$p" 2>/dev/null); then
      # "libssl3:amd64: /usr/lib/x86_64-linux-gnu/libssl.so.3" (a diversion line names none)
      awk -F': ' '!/^diversion/ {split($1, a, ", "); for (i in a) {sub(/:.*/, "", a[i]); print a[i]}}' <<<"$out"
      return 0
    fi
  done
  return 1
}

mapfile -t elves < <(find "$root" -type f -exec sh -c 'head -c4 "$1" | grep -q "ELF" && echo "$1"' _ {} \; | sort)
((${#elves[@]} > 0)) || { echo "image-packages: no ELF file under $root" >&2; exit 1; }

{
  printf '%s\n' "${extras[@]}"
  for elf in "${elves[@]}"; do
    # "libfoo.so.1 => /lib/x86_64-linux-gnu/libfoo.so.1 (0x...)" and the loader's own line;
    # a static executable has neither. "not found" is an error: the host lacks a library.
    if ldd_out=$(ldd "$elf" 2>&1); then :; else
      grep -q 'not a dynamic executable\|statically linked' <<<"$ldd_out" && continue
      echo "image-packages: ldd $elf failed: $ldd_out" >&2; exit 1
    fi
    if grep -q 'not found' <<<"$ldd_out"; then
      echo "image-packages: $elf: $(grep 'not found' <<<"$ldd_out" | tr -s ' \t' ' ')" >&2; exit 1
    fi
    # The file's own NEEDED entries (ldd lists their dependencies too), where ldd found each.
    while read -r soname; do
      # "libfoo.so.1 => /lib/.../libfoo.so.1 (0x...)", or the loader's "/lib64/ld-linux-x86-64.so.2 (0x...)"
      lib=$(awk -v n="$soname" '($1 == n && $2 == "=>") {print $3} ($1 ~ "/" n "$") {print $1}' <<<"$ldd_out" | head -1)
      [[ -n $lib ]] || { echo "image-packages: ${elf#"$root"} needs $soname, which ldd did not resolve" >&2; exit 1; }
      owner "$lib" || { echo "image-packages: $lib (needed by ${elf#"$root"}) belongs to no Debian package" >&2; exit 1; }
    done < <(readelf -d "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  done
} | sort -u
