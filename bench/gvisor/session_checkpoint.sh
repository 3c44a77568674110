#!/bin/sh
# Issue #37, through Airlock's own code: a gVisor session without egress rules holding a
# Python of MIB MiB (default 100) is checkpointed (GvisorSession::checkpoint: runsc pause,
# runsc checkpoint, the session brought back from its image) and restored into a new session
# (GvisorSessionBackend::restore_session: the workspace unpacked, runsc restore), RUNS times.
# Each run is the test gvisor_session/GvisorSessions.AProcessKeepsItsMemoryThroughACheckpoint-
# IntoANewSession, which also checks the process's memory came back; it prints the figures.
# Then the same through the daemon's HTTP API (sessions/Sessions.AGvisorSessionsMemoryComes-
# BackInANewSession): POST .../snapshot {memory: true} and POST /v1/sessions {fromSnapshot},
# each with the SHA-256 of the archive and the image.
# Run as root from the build directory:  sh ../bench/gvisor/session_checkpoint.sh [RUNS] [MIB]
set -eu
RUNS=${1:-3}
export AIRLOCK_CKPT_MIB=${2:-100}
BIN=${BIN:-tests/gvisor/gvisor_session_test}
echo "runsc: $(runsc --version | head -1); kernel $(uname -r); load $(cut -d' ' -f1-3 /proc/loadavg); ${AIRLOCK_CKPT_MIB} MiB"
for i in $(seq "$RUNS"); do
  out=$("$BIN" --gtest_filter='*AProcessKeepsItsMemoryThroughACheckpointIntoANewSession' 2>&1) || {
    echo "run $i failed:"; echo "$out" | tail -20; exit 1; }
  echo "run $i: $(echo "$out" | grep '^checkpoint ')"
done
for i in $(seq "$RUNS"); do
  out=$(tests/server/sessions_test --gtest_filter='*AGvisorSessionsMemoryComesBackInANewSession' 2>&1) || {
    echo "api run $i failed:"; echo "$out" | tail -20; exit 1; }
  echo "api run $i: $(echo "$out" | grep '^api: ')"
done
# What the API adds to each: the SHA-256 of the image (at the snapshot and before a restore).
img=$(mktemp)
head -c "$((AIRLOCK_CKPT_MIB << 20))" /dev/urandom > "$img"
t0=$(date +%s%N); sha256sum "$img" >/dev/null; echo "sha256 of ${AIRLOCK_CKPT_MIB} MiB: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
rm -f "$img"
