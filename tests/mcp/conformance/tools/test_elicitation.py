# tools-call-elicitation and the elicitation-sep1034/sep1330 scenarios: the suite wants the
# server to send elicitation/create to the client during the call. A sandboxed tool has no
# channel to the MCP client (by design): expected to fail (expected-failures.yaml).
def run(args):
    return {"text": "elicitation is not available to sandboxed tools"}
