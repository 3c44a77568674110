"""Fetches a forecast from the one host this tool may reach (weather.demo, see airlock.yaml).

It uses the proxy Airlock sets in HTTP_PROXY, like any HTTP client would; a request to any
other host is answered 403 by the egress proxy.
"""
import json
import urllib.error
import urllib.request


def run(args):
    url = args.get("url") or "http://weather.demo:8751/forecast?city=" + args["city"]
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return {"forecast": json.loads(response.read())}
    except urllib.error.HTTPError as e:
        return {"error": "HTTP %d from the egress proxy" % e.code,
                "detail": e.read().decode(errors="replace").strip()}
