#!/usr/bin/env python3
"""Where `make test` spent its time, printed after the last ctest run: each build tree's wall
time and CPU time (from ninja's log of its last build), each ctest run's tests summed by label
and its slowest tests (from ctest's LastTest.log and its list of tests).
Run as: build-and-test-times.py BUILD_DIR [BUILD_DIR...]."""
import collections
import json
import os
import re
import subprocess
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


def test_times(tree):
    """(seconds, test name) of each test of the last ctest run in `tree`."""
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
    return times


def labels_of(tree):
    """test name -> its labels, from ctest's own list of the tests in `tree`."""
    try:
        listed = subprocess.run(["ctest", "--show-only=json-v1"], cwd=tree, capture_output=True, text=True, check=True)
        tests = json.loads(listed.stdout).get("tests", [])
    except (OSError, subprocess.CalledProcessError, ValueError):
        return {}
    labels = {}
    for test in tests:
        for prop in test.get("properties", []):
            if prop.get("name") == "LABELS":
                labels[test["name"]] = prop.get("value", [])
    return labels


def by_label(times, labels):
    """Seconds and tests per label (a test without one counts as "(none)", one with several under each)."""
    sums = collections.defaultdict(lambda: [0.0, 0])
    for seconds, name in times:
        for label in labels.get(name) or ["(none)"]:
            sums[label][0] += seconds
            sums[label][1] += 1
    return sorted(sums.items(), key=lambda item: -item[1][0])


def main():
    print("== where the time went ==")
    for tree in sys.argv[1:]:
        built = build_times(tree)
        if built:
            wall, cpu, commands = built
            print(f"{tree}: last build {wall:.0f} s wall, {cpu:.0f} s in {commands} commands")
        times = test_times(tree)
        if not times:
            continue
        print(f"  tests: {sum(t for t, _ in times):.0f} s in {len(times)} tests (summed; ctest runs them side by side)")
        for label, (seconds, count) in by_label(times, labels_of(tree)):
            print(f"  {seconds:8.1f} s  label {label} ({count} tests)")
        print("  the slowest:")
        for seconds, name in sorted(times, reverse=True)[:12]:
            print(f"  {seconds:8.1f} s  {name}")


if __name__ == "__main__":
    main()
