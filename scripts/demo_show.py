"""Formats what the demo prints: an invocation's answer (`invocation`) or an Outcome from
`airlock run --json` (`run NAME`), both read from stdin."""
import json
import sys


def invocation(d):
    line = "  -> " + d["status"]
    if d.get("verdict"):
        line += ", verdict " + d["verdict"]
    if d.get("error"):
        line += ": %s: %s" % (d["error"]["kind"], d["error"]["message"])
    print(line)
    if d.get("subject"):
        print("     actor: %s, on behalf of: %s (issuer %s)" % (
            (d.get("actor") or {}).get("principal", "none"), d["subject"]["sub"], d["subject"]["issuer"]))
    if d.get("output") is not None:
        print("     output:", json.dumps(d["output"])[:240])
    for e in d.get("egress", []):
        print("     egress: %s:%s %s (%s)" % (e["host"], e["port"], "allowed" if e["allowed"] else "DENIED", e["rule"]))
    for r in d.get("redactions", []):
        print("     redacted: %s in the %s" % (r["detector"], r["where"]))
    if d.get("usage"):
        print("     usage: %s ms wall, %s processes at most%s" % (
            d["usage"]["wall_ms"], d["usage"]["pids_peak"],
            " (the process limit was hit)" if d["usage"].get("pids_limit_hit") else ""))
    if d.get("audit"):
        print("     audit record #%s" % d["audit"]["index"])


def run(name, d):
    errors = [l for l in d["stderr"].splitlines() if l.strip()]
    seen = "  [the tool saw: %s]" % errors[-1][:70] if errors and d["verdict"] == "exit_nonzero" else ""
    print("  %-18s %-14s %s%s" % (name, d["verdict"], d["message"], seen))


if __name__ == "__main__":
    data = json.load(sys.stdin)
    if sys.argv[1] == "invocation":
        invocation(data)
    else:
        run(sys.argv[2], data)
