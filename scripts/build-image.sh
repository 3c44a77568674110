#!/usr/bin/env bash
# Builds Airlock's OCI image from Debian's packages and a build tree, with no registry:
#   scripts/build-image.sh [BUILD_DIR] [OUT_DIR]        (defaults: build, BUILD_DIR/image)
# Two layers: Debian 12 (mmdebstrap: the essential set plus exactly the runtime packages
# scripts/image-packages.sh derives from the installed binaries, and the airlock user, 10001),
# then Airlock's installed files (`cmake --install`). Packed with umoci into OUT_DIR/oci, an
# OCI image layout, tag airlock:VERSION. Prints the manifest's digest.
#
# Reproducible: the same build tree, the same package versions and the same SOURCE_DATE_EPOCH
# give the same digest. SOURCE_DATE_EPOCH (default: HEAD's commit time) stamps Airlock's layer
# and the image's config; the Debian layer has a fixed one (DEBIAN_EPOCH below), so that it does
# not change with every commit. It is cached in AIRLOCK_IMAGE_CACHE (default
# ~/.cache/airlock-image), keyed by the package list and mmdebstrap's arguments and version;
# delete it, or set AIRLOCK_IMAGE_REFRESH=1, to take the archive's newer versions (security
# updates).
# Needs root (mmdebstrap's root mode; files owned by the airlock user), mmdebstrap and umoci.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR=$(realpath "${1:-$ROOT/build}")
OUT=$(realpath -m "${2:-$BUILD_DIR/image}")
CACHE=${AIRLOCK_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/airlock-image}
# Debian's tools (mmdebstrap's filters are Python: Debian's python3, not one a user put first).
export PATH=/usr/sbin:/usr/bin:/sbin:/bin

UID_GID=10001
# The Debian layer's SOURCE_DATE_EPOCH (mmdebstrap clamps every newer timestamp to it): any
# fixed time makes it reproducible; this one is Debian 12's release day, 2023-06-10.
DEBIAN_EPOCH=1686355200
SUITE=bookworm
MIRRORS=("deb http://deb.debian.org/debian bookworm main"
         "deb http://deb.debian.org/debian bookworm-updates main"
         "deb http://deb.debian.org/debian-security bookworm-security main")
# What a server never reads: documentation, manual pages, translations.
DPKG_OPTS=(--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
           --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*'
           --dpkgopt='path-exclude=/usr/share/info/*')
VERSION=$(sed -n 's/^project(airlock VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")

die() { echo "build-image: $*" >&2; exit 1; }
step() { echo "build-image: $*" >&2; }
[[ $(id -u) -eq 0 ]] || die "needs root (mmdebstrap's root mode, and files owned by uid $UID_GID)"
for tool in mmdebstrap umoci tar sha256sum; do
  command -v "$tool" >/dev/null || die "$tool is not installed (scripts/install-deps.sh installs it)"
done
[[ -x $BUILD_DIR/src/cli/airlock-serve ]] || die "no build in $BUILD_DIR (make build first)"

if [[ -z ${SOURCE_DATE_EPOCH:-} ]]; then
  SOURCE_DATE_EPOCH=$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null) ||
    die "not a git checkout: set SOURCE_DATE_EPOCH"
fi
export SOURCE_DATE_EPOCH
CREATED=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)

# 1. Airlock's files, as `cmake --install` lays them out (/usr/local: the paths compiled in).
rm -rf "$OUT"
mkdir -p "$OUT" "$CACHE"
STAGE=$OUT/stage
DESTDIR=$STAGE cmake --install "$BUILD_DIR" >/dev/null
"$ROOT/scripts/image-packages.sh" "$STAGE" >"$OUT/packages.txt"
install -D -m 0644 "$OUT/packages.txt" "$STAGE/usr/local/share/airlock/image-packages.txt"
step "runtime packages: $(paste -sd' ' "$OUT/packages.txt")"

# 2. The Debian layer, from the cache when the same inputs made it before. The hook adds the
#    daemon's user and its data directory (the default storage.dataDir of deploy/).
HOOK="echo 'airlock:x:$UID_GID:$UID_GID:Airlock:/var/lib/airlock:/usr/sbin/nologin' >>\"\$1/etc/passwd\" && \
echo 'airlock:x:$UID_GID:' >>\"\$1/etc/group\" && \
install -d -m 0700 -o $UID_GID -g $UID_GID \"\$1/var/lib/airlock\" && \
rm -f \"\$1/etc/machine-id\" \"\$1/var/lib/dbus/machine-id\" && : >\"\$1/etc/machine-id\""
MMDEBSTRAP_ARGS=(--variant=essential --include="$(paste -sd, "$OUT/packages.txt")" "${DPKG_OPTS[@]}"
                 --customize-hook="$HOOK" "$SUITE")
key=$( { printf '%s\n' "${MMDEBSTRAP_ARGS[@]}" "${MIRRORS[@]}" "$DEBIAN_EPOCH";
         mmdebstrap --version; } | sha256sum | cut -c1-16)
BASE=$CACHE/debian-$key.tar
if [[ ! -s $BASE || ${AIRLOCK_IMAGE_REFRESH:-0} == 1 ]]; then
  step "mmdebstrap: Debian $SUITE, essential + runtime packages (cache key $key)"
  # (The output's format is taken from its extension: .tar.)
  SOURCE_DATE_EPOCH=$DEBIAN_EPOCH mmdebstrap --quiet "${MMDEBSTRAP_ARGS[@]}" "$CACHE/partial-$key.tar" "${MIRRORS[@]}" ||
    die "mmdebstrap failed (the Debian archive reachable? see its messages above)"
  mv "$CACHE/partial-$key.tar" "$BASE"
  # The versions it took, beside it: what the cache key does not say.
  tar -xOf "$BASE" ./var/lib/dpkg/status | awk '/^Package:/ {p=$2} /^Version:/ {print p, $2}' \
    | sort >"$BASE.versions"
else
  step "Debian layer from the cache: $BASE"
fi
cp "$BASE.versions" "$OUT/debian-versions.txt"

# 3. Airlock's layer: sorted entries, every mtime SOURCE_DATE_EPOCH, root-owned, no
#    atime/ctime records, so the same files give the same bytes.
LAYER=$OUT/airlock-layer.tar
tar -C "$STAGE" --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
  --format=pax --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
  -cf "$LAYER" usr

# 4. The OCI image: both layers, the runtime config, every timestamp SOURCE_DATE_EPOCH.
IMAGE=$OUT/oci:$VERSION
umoci init --layout "$OUT/oci"
umoci new --image "$IMAGE"
umoci raw add-layer --image "$IMAGE" --history.created="$CREATED" \
  --history.created_by="mmdebstrap $SUITE essential + $(paste -sd' ' "$OUT/packages.txt")" "$BASE"
umoci raw add-layer --image "$IMAGE" --history.created="$CREATED" \
  --history.created_by="cmake --install $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo build)" "$LAYER"
revision=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)
umoci config --image "$IMAGE" --no-history --created="$CREATED" --author="Airlock" \
  --config.user="$UID_GID:$UID_GID" --config.workingdir=/var/lib/airlock \
  --config.env=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --config.entrypoint=/usr/local/bin/airlock \
  --config.cmd=serve --config.cmd=--config --config.cmd=/etc/airlock/airlock.yaml \
  --config.exposedports=8750/tcp --config.exposedports=3128/tcp \
  --config.label=org.opencontainers.image.title=airlock \
  --config.label=org.opencontainers.image.version="$VERSION" \
  --config.label=org.opencontainers.image.revision="$revision" \
  --config.label=org.opencontainers.image.created="$CREATED"
umoci gc --layout "$OUT/oci"
rm -rf "$STAGE" "$LAYER"

digest=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"])' \
  "$OUT/oci/index.json")
echo "$digest" >"$OUT/digest"
step "image $OUT/oci, tag $VERSION (airlock:$VERSION), manifest $digest"
echo "$digest"
