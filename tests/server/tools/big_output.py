def run(args):
    return {"blob": "x" * 200_000}
