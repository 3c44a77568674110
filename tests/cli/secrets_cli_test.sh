#!/usr/bin/env bash
# `airlock secrets` through the real binary, as a threat model: the value goes in on stdin
# only (there is no option for it), is never printed, is not in the data directory in clear,
# and decrypts with an independent AES-GCM (Python's cryptography, when installed) under the
# key file with the name as associated data. Exit 0 done, 1 the store refused, 2 usage.
set -u
AIRLOCK=$1
fails=0
check() {  # check NAME EXPECTED ACTUAL
  if [[ "$2" == "$3" ]]; then echo "ok   $1"; else echo "FAIL $1: expected [$2], got [$3]"; fails=$((fails + 1)); fi
}
contains() {  # contains NAME NEEDLE HAYSTACK
  if [[ "$3" == *"$2"* ]]; then echo "ok   $1"; else echo "FAIL $1: no [$2] in [$3]"; fails=$((fails + 1)); fi
}
lacks() {  # lacks NAME NEEDLE HAYSTACK
  if [[ "$3" != *"$2"* ]]; then echo "ok   $1"; else echo "FAIL $1: [$2] in [$3]"; fails=$((fails + 1)); fi
}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/airlock.yaml" <<'YAML'
apiVersion: airlock.dev/v1
kind: AirlockConfig
storage: {dataDir: data}
YAML
cfg="$tmp/airlock.yaml"
data="$tmp/data"
value="s3cr3t-cli-Value-4d1e"

# What secrets.db holds for NAME, decrypted independently, as hex ("" when it does not open).
have_aesgcm=$(python3 -c 'import cryptography.hazmat.primitives.ciphers.aead' 2>/dev/null && echo yes)
stored_hex() {  # stored_hex NAME [KEY_FILE]
  python3 - "$data/secrets.db" "${2:-$data.secrets-key}" "$1" <<'PY'
import sqlite3, sys
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
db, key_file, name = sys.argv[1:4]
nonce, ciphertext, tag = sqlite3.connect(db).execute(
    "SELECT nonce, ciphertext, tag FROM secrets WHERE name = ?", (name,)).fetchone()
try:
    print(AESGCM(open(key_file, "rb").read()).decrypt(nonce, ciphertext + tag, name.encode()).hex())
except Exception:
    print("")
PY
}
hex() { printf '%s' "$1" | od -An -tx1 | tr -d ' \n'; }
check_stored() {  # check_stored TEST NAME EXPECTED_VALUE
  if [[ $have_aesgcm == yes ]]; then check "$1" "$(hex "$3")" "$(stored_hex "$2")"
  else echo "skip $1: no python3 cryptography"; fi
}

# set, from a pipe: exactly one trailing newline is stripped.
out=$(echo "$value" | "$AIRLOCK" secrets set api-token --config "$cfg" 2>&1); rc=$?
check "set exits 0" 0 $rc
contains "set says so" "secret api-token set" "$out"
lacks "set does not print the value" "$value" "$out"
check_stored "the value decrypts, the newline stripped" api-token "$value"
check "key file created 0600" 600 "$(stat -c %a "$data.secrets-key")"
check "key file is 32 bytes" 32 "$(stat -c %s "$data.secrets-key")"
printf 'two\n\n' | "$AIRLOCK" secrets set two-lines --config "$cfg" >/dev/null
check_stored "only one newline is stripped" two-lines $'two\n'
printf 'no-newline' | "$AIRLOCK" secrets set raw --config "$cfg" >/dev/null
check_stored "no newline: the bytes as they are" raw "no-newline"
echo "rotated-$value" | "$AIRLOCK" secrets set api-token --config "$cfg" >/dev/null
check_stored "set again replaces the value" api-token "rotated-$value"

# The value is never an argument: there is no option or positional for it.
# Given one anyway, it is refused without being echoed back.
out=$("$AIRLOCK" secrets set leak --value "$value" --config "$cfg" </dev/null 2>&1); rc=$?
check "set --value is a usage error" 2 $rc
contains "set --value says where the value goes" "read from stdin" "$out"
lacks "set --value does not echo the value" "$value" "$out"
out=$("$AIRLOCK" secrets set leak "--value=$value" --config "$cfg" </dev/null 2>&1); rc=$?
check "set --value= is a usage error" 2 $rc
lacks "set --value= does not echo the value" "$value" "$out"
out=$(echo "$value" | "$AIRLOCK" secrets set leak "$value" --config "$cfg" 2>&1); rc=$?
check "a value as a second argument is a usage error" 2 $rc
lacks "a value as a second argument is not echoed" "$value" "$out"
lacks "set --help has no value option" "--value" "$("$AIRLOCK" secrets set --help 2>&1)"

# list: names and times, never values.
out=$("$AIRLOCK" secrets list --config "$cfg" 2>&1); rc=$?
check "list exits 0" 0 $rc
contains "list names the secret" "api-token  20" "$out"
check "list has one line per secret" 3 "$(grep -c . <<<"$out")"
lacks "list does not print the value" "$value" "$out"
json=$("$AIRLOCK" secrets list --config "$cfg" --json); rc=$?
check "list --json exits 0" 0 $rc
check "list --json names" "api-token raw two-lines" \
  "$(python3 -c 'import json,sys; print(" ".join(s["name"] for s in json.load(sys.stdin)["secrets"]))' <<<"$json")"
check "list --json has updated_ms" yes \
  "$(python3 -c 'import json,sys; print("yes" if all(s["updated_ms"] > 0 for s in json.load(sys.stdin)["secrets"]) else "no")' <<<"$json")"
lacks "list --json does not print the value" "$value" "$json"

# Nothing in the data directory, or beside it, holds the value in clear (the name is there:
# the search reads the files).
contains "control: the names are in the data directory" secrets.db "$(grep -rlaF api-token "$data")"
check "the value is not in the data directory" "" "$(grep -rlaF "$value" "$data" "$data.secrets-key")"
check "the data directory is private" 700 "$(stat -c %a "$data")"
check "secrets.db is private" 600 "$(stat -c %a "$data/secrets.db")"

# Refusals: empty, too large, a bad name, a bad configuration.
out=$(printf '\n' | "$AIRLOCK" secrets set empty --config "$cfg" 2>&1); rc=$?
check "an empty value is a usage error" 2 $rc
contains "an empty value says where to give it" "give it on stdin" "$out"
out=$(head -c 70000 /dev/zero | tr '\0' v | "$AIRLOCK" secrets set big --config "$cfg" 2>&1); rc=$?
check "a value over 64 KiB is refused" 2 $rc
contains "too large says the limit" "65536 bytes" "$out"
out=$(echo x | "$AIRLOCK" secrets set Bad/Name --config "$cfg" 2>&1); rc=$?
check "a bad name is a usage error" 2 $rc
contains "a bad name says the rule" "lower-case letters" "$out"
out=$(echo x | "$AIRLOCK" secrets set fine --config "$tmp/missing.yaml" 2>&1); rc=$?
check "a missing configuration is a usage error" 2 $rc
check "refused values were not stored" "api-token raw two-lines" \
  "$("$AIRLOCK" secrets list --config "$cfg" | cut -d' ' -f1 | tr '\n' ' ' | sed 's/ $//')"

# rm
out=$("$AIRLOCK" secrets rm raw --config "$cfg" 2>&1); rc=$?
check "rm exits 0" 0 $rc
lacks "rm removed it from list" "raw" "$("$AIRLOCK" secrets list --config "$cfg")"
out=$("$AIRLOCK" secrets rm raw --config "$cfg" 2>&1); rc=$?
check "rm of an unknown secret exits 1" 1 $rc
contains "rm of an unknown secret says so" "unknown_secret" "$out"

# While a daemon holds the data directory's lock (airlock-serve's flock on airlock.lock).
out=$(flock "$data/airlock.lock" sh -c "echo locked-value | '$AIRLOCK' secrets set while-locked --config '$cfg'" 2>&1); rc=$?
check "set works while the data directory is locked" 0 $rc
check_stored "the value set under the lock" while-locked "locked-value"

# The key file: refused when others may read it; another key does not open the values.
chmod 644 "$data.secrets-key"
out=$("$AIRLOCK" secrets list --config "$cfg" 2>&1); rc=$?
check "a group/world-readable key file is refused" 1 $rc
contains "the refusal names it" "insecure_key_file" "$out"
chmod 600 "$data.secrets-key"
out=$(echo "$value" | AIRLOCK_SECRETS_KEY_FILE="$tmp/other.key" "$AIRLOCK" secrets set other-key --config "$cfg" 2>&1); rc=$?
check "AIRLOCK_SECRETS_KEY_FILE: set exits 0" 0 $rc
check "AIRLOCK_SECRETS_KEY_FILE: the key is made there" 600 "$(stat -c %a "$tmp/other.key" 2>&1)"
if [[ $have_aesgcm == yes ]]; then
  check "AIRLOCK_SECRETS_KEY_FILE: sealed with that key" "$(hex "$value")" "$(stored_hex other-key "$tmp/other.key")"
  check "AIRLOCK_SECRETS_KEY_FILE: the default key does not open it" "" "$(stored_hex other-key)"
fi

# From a terminal: one line, not echoed (the pty would show it if it were).
if [[ $have_aesgcm == yes ]]; then
  echoed=$(python3 - "$AIRLOCK" "$cfg" "typed-$value" <<'PY'
import os, subprocess, sys, time
airlock, cfg, value = sys.argv[1:4]
master, slave = os.openpty()
p = subprocess.Popen([airlock, "secrets", "set", "typed", "--config", cfg],
                     stdin=slave, stdout=slave, stderr=slave, close_fds=True)
os.close(slave)
seen = b""
deadline = time.time() + 10
while b"not echoed" not in seen and time.time() < deadline:
    seen += os.read(master, 1024)
os.write(master, value.encode() + b"\n")
p.wait(timeout=10)
try:
    while True:
        chunk = os.read(master, 1024)
        if not chunk:
            break
        seen += chunk
except OSError:
    pass
print(seen.decode(errors="replace"))
PY
)
  contains "tty: prompts" "Value of secret typed" "$echoed"
  contains "tty: set" "secret typed set" "$echoed"
  lacks "tty: the typed value is not echoed" "typed-$value" "$echoed"
  check_stored "tty: the typed line is the value" typed "typed-$value"
fi

echo "$fails failed"
[[ $fails == 0 ]]
