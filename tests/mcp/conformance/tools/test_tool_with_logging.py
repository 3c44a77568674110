# tools-call-with-logging: the suite wants 3 notifications/message during the call. A tool's
# stderr is its log, kept with the invocation (GET /v1/invocations/{id}), not sent as MCP
# log notifications: expected to fail (expected-failures.yaml).
import sys
import time


def run(args):
    for line in ("Tool execution started", "Tool processing data", "Tool execution completed"):
        print(line, file=sys.stderr)
        time.sleep(0.05)
    return {"text": "Tool with logging completed"}
