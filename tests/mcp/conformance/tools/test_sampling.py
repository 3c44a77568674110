# tools-call-sampling: the suite wants the server to send sampling/createMessage to the client
# during the call. A sandboxed tool has no channel to the MCP client (by design): expected to
# fail (expected-failures.yaml).
def run(args):
    return {"text": "sampling is not available to sandboxed tools", "prompt": args.get("prompt", "")}
