#!/usr/bin/env bash
# deploy/systemd/airlock.service and its unprivileged drop-in, checked by systemd's own
# parser (systemd-analyze verify), with ExecStart pointed at the built binary (verify checks
# that it exists). Fails on any warning.
#   tests/vm/verify-systemd-unit.sh SOURCE_DIR AIRLOCK_BINARY
set -euo pipefail
src=$1 airlock=$2
command -v systemd-analyze >/dev/null || { echo "verify-systemd-unit: systemd-analyze is missing" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/airlock.service.d"
sed "s|/usr/local/bin/airlock|$airlock|" "$src/deploy/systemd/airlock.service" >"$work/airlock.service"
grep -q "^ExecStart=$airlock serve" "$work/airlock.service"
grep -q '^Delegate=yes$' "$work/airlock.service"
cp "$src/deploy/systemd/unprivileged.conf" "$work/airlock.service.d/"
for unit in "$work/airlock.service"; do
  out=$(cd "$work" && SYSTEMD_UNIT_PATH="$work:" systemd-analyze verify --man=no "$unit" 2>&1) || {
    echo "$out"; exit 1; }
  # Lines about other units (the host's own) are not ours.
  ours=$(grep -F "airlock" <<<"$out" || true)
  if [[ -n $ours ]]; then echo "$ours"; exit 1; fi
done
echo "verify-systemd-unit: airlock.service and unprivileged.conf parse cleanly"
