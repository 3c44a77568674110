# Forks a child that detaches and keeps retrying its credential (a postgres URL) after the
# call returns: the sandbox must end it, and the role must be gone by then anyway.
import os
import subprocess
import time


def run(args):
    url = os.environ.get(args["var"], "")
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() != 0:
            os._exit(0)
        devnull = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)  # detached: the call's output ends without it
        for _ in range(600):
            subprocess.run(["/usr/lib/postgresql/15/bin/psql", url, "-Atc", "select 1"], capture_output=True)
            time.sleep(0.1)
        os._exit(0)
    os.waitpid(pid, 0)
    first = subprocess.run(["/usr/lib/postgresql/15/bin/psql", url, "-Atc", "select count(*) from orders"], capture_output=True, text=True)
    return {"orders": first.stdout.strip(), "error": first.stderr.strip()[:200]}
