#!/usr/bin/env bash
# Test set-up: a setuid-root copy of print_ids, which the sandbox must render powerless.
# Only root can make one; otherwise the test that uses it reports a skip.
set -euo pipefail
src=$1 dest=$2
mkdir -p "$(dirname "$dest")"
chmod 755 "$(dirname "$dest")"
cp "$src" "$dest"
if [[ $(id -u) -eq 0 ]]; then
  chown root:root "$dest"
  chmod 4755 "$dest"
  echo "made setuid-root $dest"
else
  echo "not root: $dest is not setuid"
fi
