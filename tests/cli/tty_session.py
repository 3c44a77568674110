#!/usr/bin/env python3
"""`airlock run --tty` from a real terminal: a pty of ours plays the caller's terminal.

    tty_session.py AIRLOCK

Prints one line per check ("ok   NAME" or "FAIL NAME: ..."), exits 1 if any failed.
"""
import fcntl
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import time

AIRLOCK = sys.argv[1]
fails = 0


def check(name, expected, actual):
    global fails
    if expected == actual:
        print("ok  ", name)
    else:
        print(f"FAIL {name}: expected [{expected!r}], got [{actual!r}]")
        fails += 1


def set_size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class Session:
    """airlock run --tty ARGS, with a fresh pty of ours as its controlling terminal."""

    def __init__(self, args, rows=40, cols=120):
        self.master, self.slave = os.openpty()
        set_size(self.slave, rows, cols)
        self.before = termios.tcgetattr(self.slave)
        self.out = b""
        self.proc = subprocess.Popen(
            [AIRLOCK, "run", "--tty", "--"] + args,
            stdin=self.slave, stdout=self.slave, stderr=self.slave, start_new_session=True,
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))

    def read_until(self, token, timeout=30):
        end = time.time() + timeout
        while token not in self.out and time.time() < end:
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if ready:
                try:
                    self.out += os.read(self.master, 4096)
                except OSError:
                    break
        return token in self.out

    def mode(self):
        lflag = termios.tcgetattr(self.slave)[3]
        return "raw" if not lflag & (termios.ICANON | termios.ECHO | termios.ISIG) else "cooked"

    def finish(self):
        rc = self.proc.wait(timeout=60)
        self.read_until(b"\0", timeout=0.3)  # whatever is left
        restored = termios.tcgetattr(self.slave) == self.before
        os.close(self.master)
        os.close(self.slave)
        return rc, restored


# The window size, raw mode while it runs, a resize, typed input, and the restored terminal.
program = r'''
import os, signal, sys
sizes = []
signal.signal(signal.SIGWINCH, lambda *_: sizes.append(os.get_terminal_size()))
size = os.get_terminal_size()
print("size", size.lines, size.columns, "ttyname", os.ttyname(0), flush=True)
line = sys.stdin.readline()
print("read", repr(line), "resized", [(s.lines, s.columns) for s in sizes], flush=True)
'''
s = Session(["python3", "-c", program])
check("the pty starts with the caller's window size", True, s.read_until(b"ttyname /dev/pts/0"))
check("window size", True, b"size 40 120" in s.out)
check("the caller's terminal is raw while it runs", "raw", s.mode())
set_size(s.slave, 50, 132)  # the kernel sends SIGWINCH to airlock, in the foreground
time.sleep(0.5)
os.write(s.master, b"typed\r")  # raw: the sandbox's own line discipline turns CR into NL
s.read_until(b"resized")
rc, restored = s.finish()
check("typed input reaches the program", True, b"read 'typed\\n'" in s.out)
check("resizes follow", True, b"resized [(50, 132)]" in s.out)
check("exit status", 0, rc)
check("the caller's terminal is restored", True, restored)

# ^C is a byte for the sandbox's terminal, which makes it SIGINT there (not for airlock).
# The program sleeps in slices: Python's handler only notes a signal, so one that lands after
# print() returns but before a single time.sleep(30) enters the kernel would wait out the sleep
# (seen under load: the handler had run, SIGINT was caught, the sleep went on).
s = Session(["python3", "-c",
             "import time\nprint('ready', flush=True)\nfor _ in range(300): time.sleep(0.1)"])
s.read_until(b"ready")
os.write(s.master, b"\x03")
rc, restored = s.finish()
check("^C interrupts the program inside", 130, rc)
if rc != 130:  # what the terminal showed
    print("     the terminal showed:", repr(s.out[-600:]))
check("restored after ^C", True, restored)

# Restored on the error paths too: a setup error, and airlock itself terminated.
s = Session(["/no/such/command"])
rc, restored = s.finish()
check("setup error", 125, rc)
check("restored after a setup error", True, restored)
s = Session(["python3", "-c", "import time\nprint('ready', flush=True)\ntime.sleep(30)"])
s.read_until(b"ready")
check("raw before SIGTERM", "raw", s.mode())
s.proc.send_signal(signal.SIGTERM)
rc, restored = s.finish()
check("airlock ends on SIGTERM", -signal.SIGTERM, rc)
check("restored after SIGTERM", True, restored)

sys.exit(1 if fails else 0)
