# Tells a collector on the host that it ran (through its port forward 7000), with its
# arguments, then echoes them: a test counts the collector's bodies to count the tool's runs.
import http.client
import json


def run(args):
    conn = http.client.HTTPConnection("127.0.0.1", 7000, timeout=10)
    conn.request("POST", "/ran", body=json.dumps(args).encode(), headers={"Content-Type": "application/json"})
    conn.getresponse().read()
    return {"echo": args}
