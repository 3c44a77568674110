#!/usr/bin/env python3
"""The layering check (issue #34): no folder under src/ includes a header of a layer above it.

Usage: check_layering.py <layering map written by cmake/Layering.cmake> <src dir>

A unit is a folder under src/ that defines targets of its own (src/sandbox, src/server/http,
src/backend/kubernetes); a folder without targets belongs to the nearest unit above it
(src/sandbox/warm is src/sandbox's). A unit's file may include "<path>/x.hpp" of another
unit only when one of its targets links, directly or through other targets, a target of
that unit. An include of a unit none of its targets reach is an upward include: the check
names each one and fails. So src/server/invocations may include src/server/core, which its
library links, but not src/server/approvals, which links it.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def read_map(path):
    targets = {}  # target -> (unit folder, [linked names])
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 3:
                continue
            target, folder, links = parts
            targets[target] = (folder, [l for l in links.split(";") if l])
    return targets


def unit_of(directory, units):
    """The deepest unit that is `directory` or holds it, or None."""
    while directory:
        if directory in units:
            return directory
        directory = os.path.dirname(directory)
    return None


def reachable_units(targets):
    """For each unit: the units its targets reach through links (itself included)."""
    def closure(target, seen):
        for link in targets[target][1]:
            if link in targets and link not in seen:
                seen.add(link)
                closure(link, seen)
        return seen

    reach = {}
    for target, (unit, _) in targets.items():
        reached = reach.setdefault(unit, {unit})
        reached.update(targets[t][0] for t in closure(target, {target}))
    return reach


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    targets = read_map(sys.argv[1])
    src = sys.argv[2]
    if not targets:
        sys.exit(f"layering: no targets in {sys.argv[1]}: the map is empty or unreadable")
    reach = reachable_units(targets)
    units = set(reach)
    tops = {name for name in os.listdir(src) if os.path.isdir(os.path.join(src, name))}
    upward = []
    checked = 0
    for root, _, files in os.walk(src):
        # A folder of no unit in this configuration (src/cli in the unit-tests-only tree) is
        # not checked: its links are unknown here.
        unit = unit_of(os.path.relpath(root, src), units)
        if unit is None:
            continue
        for name in sorted(files):
            if not name.endswith((".cpp", ".hpp", ".h", ".c")):
                continue
            path = os.path.join(root, name)
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            checked += 1
            for included in INCLUDE.findall(text):
                if included.split("/")[0] not in tops:
                    continue  # a generated or third-party header
                target_unit = unit_of(os.path.dirname(included), units)
                if target_unit is not None and target_unit not in reach[unit]:
                    upward.append(f"{os.path.relpath(path, src)} includes \"{included}\": no target of "
                                  f"src/{unit} links one of src/{target_unit} (an upward include)")
    for line in upward:
        print(line)
    print(f"layering: {checked} files in {len(units)} units, {len(upward)} upward includes")
    sys.exit(1 if upward else 0)


if __name__ == "__main__":
    main()
