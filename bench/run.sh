#!/usr/bin/env bash
# Builds the benchmarks in Release and runs one (or all): bench/run.sh [startup|identity|...]
# Prints the machine first, so the figures can be copied into docs/performance.md with it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DAIRLOCK_WERROR=ON >/dev/null
cmake --build build-bench -j "$(nproc)" >/dev/null
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo),"\
     "$(. /etc/os-release; echo "$PRETTY_NAME"), kernel $(uname -r),"\
     "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
for b in ${1:-$(cd build-bench/bench && ls bench_* | sed 's/bench_//')}; do
  echo "== bench_$b"
  build-bench/bench/bench_"$b" --benchmark_counters_tabular=true
done
