# Calls an HTTPS API through the egress proxy with the bearer token it was given, and reports
# what it had and what came back.
import http.client
import os
import ssl


def run(args):
    token = os.environ.get("SLACK_TOKEN", "")
    ctx = ssl.create_default_context()
    if args.get("unverified"):  # a host whose CA the sandbox does not trust (a test's)
        ctx = ssl._create_unverified_context()
    conn = http.client.HTTPSConnection("127.0.0.1", 3128, timeout=20, context=ctx)
    conn.set_tunnel(args["host"], args["port"])
    try:
        conn.request("GET", "/api/chat.postMessage", headers={"Authorization": "Bearer " + token})
        r = conn.getresponse()
        return {"env": token, "status": r.status, "body": r.read().decode().strip()}
    except (OSError, ssl.SSLError) as e:
        return {"env": token, "status": 0, "error": str(e)[:200]}
