# Tries to leak its credentials: returns each (named in args["vars"]) as is and in several
# encodings, and prints them to its log. Sleeps args["sleep"] seconds first when given.
import base64
import os
import sys
import time
import urllib.parse


def run(args):
    time.sleep(args.get("sleep", 0))
    out = {}
    for name in args.get("vars", []):
        value = os.environ.get(name, "")
        raw = value.encode()
        out[name] = {
            "raw": value,
            "base64": base64.b64encode(raw).decode(),
            "base64url": base64.urlsafe_b64encode(raw).decode().rstrip("="),
            "hex": raw.hex(),
            "HEX": raw.hex().upper(),
            "url": urllib.parse.quote(value, safe=""),
            "in_text": "the credential is " + value + ", use it well",
        }
        print("leaking", name, value, file=sys.stderr)
    return out
