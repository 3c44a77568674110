"""`airlock doctor --json` on the pure cgroup v2 test host (stdin): what it must say there."""
import json
import sys

report = json.load(sys.stdin)
checks = {c["name"]: c for c in report["checks"]}
wanted = {
    "cgroup memory": "v2 at ",
    "cgroup pids": "v2 at ",
    "cgroup cpu accounting": "v2 at ",
    "cgroup hierarchies": "pure cgroup v2; v2: ",
    "cgroup v2 delegation": "",
    "warm calls (tools[].warm)": "v2: each call's init is cloned into the call's cgroup",
    "trial sandbox (/bin/true)": "",
}
failed = []
if not report["usable"]:
    failed.append("not usable")
for name, start in wanted.items():
    check = checks.get(name)
    if check is None:
        failed.append(f"no line {name!r}")
    elif not check["works"] or not check["detail"].startswith(start):
        failed.append(f"{name}: {check['detail']!r} (works: {check['works']})")
for controller in ("cpu", "io", "memory", "pids", "cpuset", "hugetlb"):
    if controller not in checks.get("cgroup hierarchies", {}).get("detail", ""):
        failed.append(f"cgroup hierarchies: no {controller}")
if failed:
    print("check-doctor: " + "; ".join(failed))
    sys.exit(1)
print("check-doctor: doctor names pure cgroup v2, its delegation and warm calls as working")
