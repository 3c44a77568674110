# tools-call-error: a tool that fails; Airlock answers isError: true with the error's text.
def run(args):
    raise RuntimeError("This tool intentionally returns an error for testing")
