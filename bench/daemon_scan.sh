#!/bin/bash
# The call path's stages through a running `airlock serve` (docs/performance.md, issue #20): a
# ~1 MiB body of log lines (an IPv4 address in one line in ten, an escape per line) sent to a
# tool whose inputSchema checks it (a pattern, maxLength 4 MiB), N calls in a row (CALLS, 62);
# the first two are dropped; p50 and min of check_input and scan_input from Server-Timing.
# Usage: bench/daemon_scan.sh [build dir]   (as root: the daemon runs sandboxes)
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
mkdir tools data
printf 'def run(args):\n    return {"n": len(args["text"])}\n' > tools/length.py
cat > airlock.yaml <<'YAML'
apiVersion: airlock.dev/v1
kind: AirlockConfig
server: {listen: 127.0.0.1:8790, maxBodyBytes: 4Mi, maxConcurrentInvocations: 2, queueLength: 8}
storage: {dataDir: ./data}
principals:
  - name: agent
    apiKeySha256: 8254c329a92850f6d539dd376f4816ee2764517da5e0235514af433164480d7a  # "k"
    tools: ["length"]
tiers:
  low: {timeout: 10s, cpuTime: 5s, memory: 256Mi, pids: 32, disk: 32Mi, output: 1Mi}
tools:
  - name: length
    risk: low
    runtime: {type: python, file: tools/length.py}
    inputSchema:
      type: object
      required: [source, text]
      additionalProperties: false
      properties:
        source: {type: string, pattern: "^[a-z-]+$"}
        text: {type: string, maxLength: 4194304}
YAML
python3 - <<'PY'
import json, random
random.seed(7)
lines, size = [], 0
while size < 1_045_000:
    i = len(lines)
    if i % 10 == 0:
        line = "2026-12-03T10:%02d:%02d INFO api request from 10.%d.%d.%d took %d ms" % (
            i % 60, i % 60, random.randint(0, 255), random.randint(0, 255), random.randint(1, 254), random.randint(1, 900))
    else:
        line = "2026-12-03T10:%02d:%02d DEBUG worker %d processed batch %d of %d items ok" % (
            i % 60, i % 60, i % 7, i, random.randint(10, 999))
    lines.append(line)
    size += len(line) + 2
open("body.json", "w").write(json.dumps({"arguments": {"source": "app-logs", "text": "\n".join(lines)}}))
PY
"$BUILD/src/cli/airlock" serve --config airlock.yaml > serve.log 2>&1 &
pid=$!
for _ in $(seq 50); do curl -sf localhost:8790/healthz > /dev/null && break; sleep 0.2; done
for _ in $(seq "${CALLS:-62}"); do
  curl -s -o last.json -D - -H 'Authorization: Bearer k' -H 'Content-Type: application/json' \
    --data-binary @body.json localhost:8790/v1/tools/length/invoke | grep -i '^server-timing' || true
done > timings.txt
kill "$pid"; wait "$pid" 2>/dev/null || true
python3 - <<'PY'
import json, re, statistics
rows = open("timings.txt").read().splitlines()[2:]
size = len(open("body.json", "rb").read())
last = json.load(open("last.json"))
print("body %d bytes; last call: %s, %d redactions" % (size, last["status"], len(last["redactions"])))
for stage in ("check_input", "scan_input"):
    values = [float(m.group(1)) for r in rows for m in [re.search(stage + r";dur=([0-9.]+)", r)] if m]
    p50 = statistics.median(values)
    print("%-12s n=%d p50 %.2f ms (%.0f MB/s), min %.2f ms (%.0f MB/s)" % (
        stage, len(values), p50, size / p50 / 1000, min(values), size / min(values) / 1000))
PY
