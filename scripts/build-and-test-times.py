#!/usr/bin/env python3
"""Where `make test` spent its time, printed after the last ctest run: each build tree's wall
time and CPU time (from ninja's log of its last build) and the slowest tests of each ctest run
(from ctest's LastTest.log). Run as: build-and-test-times.py BUILD_DIR [BUILD_DIR...]."""
import os
import re
import sys


def build_times(tree):
    """Wall and summed compile/link seconds of the last build ninja recorded in `tree`."""
    path = os.path.join(tree, ".ninja_log")
    if not os.path.exists(path):
        return None
    runs, last_end = [[]], -1
    with open(path) as log:
        for line in log:
            if line.startswith("#"):
                continue
            fields = line.rstrip("\n").split("\t")
            if len(fields) < 5:
                continue
            start, end = int(fields[0]), int(fields[1])
            # Ninja writes a step when it ends and restarts its clock at each build: an end
            # earlier than the line before starts the next build.
            if end < last_end:
                runs.append([])
            runs[-1].append((start, end))
            last_end = end
    # Outputs of one command share start and end; count each command once.
    commands = set(runs[-1])
    if not commands:
        return None
    wall = max(end for _, end in commands) - min(start for start, _ in commands)
    cpu = sum(end - start for start, end in commands)
    return wall / 1000, cpu / 1000, len(commands)


def slowest_tests(tree, count):
    path = os.path.join(tree, "Testing", "Temporary", "LastTest.log")
    if not os.path.exists(path):
        return []
    times, name = [], None
    with open(path, errors="replace") as log:
        for line in log:
            started = re.match(r"\d+/\d+ Testing: (.+)$", line)
            if started:
                name = started.group(1)
                continue
            took = re.match(r"Test time =\s*([\d.]+) sec", line)
            if took and name:
                times.append((float(took.group(1)), name))
                name = None
    return sorted(times, reverse=True)[:count]


def main():
    print("== where the time went ==")
    for tree in sys.argv[1:]:
        built = build_times(tree)
        if built:
            wall, cpu, commands = built
            print(f"{tree}: last build {wall:.0f} s wall, {cpu:.0f} s in {commands} commands")
        for seconds, name in slowest_tests(tree, 12):
            print(f"  {seconds:8.1f} s  {name}")


if __name__ == "__main__":
    main()
