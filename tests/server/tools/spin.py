def run(args):
    while True:
        pass
