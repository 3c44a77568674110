def run(args):
    print("a tool's own print goes to its log, not into the result")
    return {"echo": args}
