#!/bin/sh
# The daemon the client scripts talk to (a ctest fixture):
#   daemon.sh start WORKDIR AIRLOCK TOOLS_DIR KEY  writes WORKDIR/{airlock.yaml,airlock-stdio.yaml},
#                                                  starts `airlock serve`, writes WORKDIR/url
#                                                  (principals: agent KEY, other-agent KEY-other,
#                                                  no-sessions KEY-none; a session template)
#   daemon.sh stop WORKDIR                         stops it and removes WORKDIR
#   daemon.sh run WORKDIR SCRIPT ARGS...           node SCRIPT "$(cat WORKDIR/url)" ARGS...
set -eu
action=$1 work=$2
shift 2

config() {  # config DATA_DIR
  cat <<YAML
apiVersion: airlock.dev/v1
kind: AirlockConfig
server: {listen: 127.0.0.1:0, maxConcurrentInvocations: 4, queueLength: 16, drainTimeout: 20s}
storage: {dataDir: $1}
principals:
  - name: agent
    apiKeySha256: $key_sha256
    tools: ["*"]
    sessionTemplates: ["*"]
  - name: other-agent
    apiKeySha256: $other_sha256
    tools: ["*"]
    sessionTemplates: ["*"]
  - name: no-sessions
    apiKeySha256: $none_sha256
    tools: ["*"]
tiers:
  low: {timeout: 10s, memory: 128Mi, pids: 16, output: 64Ki}
tools:
  - name: echo
    description: Returns its arguments.
    runtime: {type: python, file: tools/echo.py}
    inputSchema: {type: object, properties: {n: {type: integer}}}
  - name: crash
    runtime: {type: python, file: tools/crash.py}
sessionTemplates:
  - name: workspace
    description: A Python workspace
    limits: {idleTimeout: 10m, maxLifetime: 1h}
YAML
}

case $action in
start)
  airlock=$1 tools=$2 key=$3
  rm -rf "$work" && mkdir -p "$work" && chmod 0755 "$work"
  cp -r "$tools" "$work/tools" && chmod 0755 "$work/tools" && chmod 0644 "$work"/tools/*
  key_sha256=$(printf %s "$key" | sha256sum | cut -d' ' -f1)
  # Two more principals (sdk_sessions.mjs): another agent, and one that may create no session.
  other_sha256=$(printf %s "$key-other" | sha256sum | cut -d' ' -f1)
  none_sha256=$(printf %s "$key-none" | sha256sum | cut -d' ' -f1)
  config data > "$work/airlock.yaml"
  config data-stdio > "$work/airlock-stdio.yaml"
  # Its own stdout and stdin: ctest waits for whatever holds the test's output open.
  "$airlock" serve --config "$work/airlock.yaml" < /dev/null > "$work/daemon.out" 2> "$work/daemon.log" &
  echo $! > "$work/pid"
  for _ in $(seq 1 300); do
    port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$work/daemon.log")
    if [ -n "$port" ]; then echo "http://127.0.0.1:$port/mcp" > "$work/url"; exit 0; fi
    sleep 0.1
  done
  cat "$work/daemon.log" >&2
  exit 1 ;;
stop)
  if [ -f "$work/pid" ]; then kill "$(cat "$work/pid")" 2>/dev/null || true; fi
  # `airlock serve` drains before it exits; wait for it, then remove what it left.
  for _ in $(seq 1 300); do kill -0 "$(cat "$work/pid")" 2>/dev/null || break; sleep 0.1; done
  rm -rf "$work" ;;
run)
  script=$1
  shift
  exec node "$script" "$(cat "$work/url")" "$@" ;;
esac
