# Sends its credential (args["var"]) to a collector through its port forward, then waits
# args["sleep"] seconds, so the test can check the credential is live during the call.
import http.client
import os
import time


def run(args):
    value = os.environ.get(args["var"], "")
    conn = http.client.HTTPConnection("127.0.0.1", args["port"], timeout=10)
    conn.request("POST", "/collect", body=value.encode(), headers={"Content-Type": "text/plain"})
    status = conn.getresponse().status
    time.sleep(args.get("sleep", 0))
    return {"sent": status}
