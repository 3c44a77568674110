#!/usr/bin/env bash
# make demo: hostile Python "tools" run through `airlock run`; each verdict is printed.
set -euo pipefail
AIRLOCK=${1:-build/src/cli/airlock}
TOOLS="$(cd "$(dirname "$0")/../examples/hostile" && pwd)"

run_tool() {  # run_tool FILE [airlock run options...]
  local tool=$1
  shift
  local json
  json=$("$AIRLOCK" run --json --ro "$TOOLS:/tools" "$@" -- python3 "/tools/$tool" || true)
  python3 - "$tool" "$json" <<'PY'
import json, sys
tool, outcome = sys.argv[1], json.loads(sys.argv[2])
usage = outcome["usage"]
pad = " " * 40
print(f"  {tool:<18} {outcome['verdict']:<19} {outcome['message']}")
errors = [l for l in outcome["stderr"].splitlines() if l.strip()]
if errors:
    print(f"{pad}the tool saw: {errors[-1]}")
print(f"{pad}wall {usage['wall_ms']} ms, cpu {usage['cpu_user_ms'] + usage['cpu_sys_ms']} ms, "
      f"peak memory {(usage['memory_peak_bytes'] or 0) >> 20} MiB, peak processes {usage['pids_peak']}")
PY
}

echo "Airlock demo: five hostile tools, each in its own sandbox (airlock run)."
echo
"$AIRLOCK" doctor | grep -E "^  (FAIL|warn)" || true
printf "  %-18s %-19s %s\n" TOOL VERDICT "WHAT HAPPENED"
run_tool read_shadow.py
run_tool connect_out.py
run_tool fork_bomb.py --timeout 3s --pids 64
run_tool memory_hog.py --memory 512M
run_tool infinite_loop.py --timeout 2s
echo
echo "Nothing left behind: no process, mount or cgroup of these runs remains."
