# Looks for a value in every other process's environment and command line it can see (the
# way a tool would steal another sandbox's credential), and reports where it found it.
import os


def run(args):
    needle = args["needle"].encode()
    me = os.getpid()
    seen, found = [], []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        seen.append(int(entry))
        for part in ("environ", "cmdline"):
            try:
                with open("/proc/%s/%s" % (entry, part), "rb") as f:
                    if needle in f.read():
                        found.append("%s/%s" % (entry, part))
            except OSError:
                pass
    return {"pids_seen": seen, "found": found}
