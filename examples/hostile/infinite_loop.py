# A "tool" that never returns (and ignores polite requests to stop).
import signal

signal.signal(signal.SIGTERM, signal.SIG_IGN)
while True:
    pass
