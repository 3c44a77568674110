import time


def run(args):
    time.sleep(args.get("seconds", 3))
    return {"slept": args.get("seconds", 3)}
