def run(args):
    raise RuntimeError("the tool broke")
