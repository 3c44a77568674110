import sys
import urllib.request


def run(args):
    # Through the egress proxy (HTTP_PROXY): the address is not in the tool's rules.
    try:
        urllib.request.urlopen("http://10.1.2.3/", timeout=5)
    except Exception as e:
        sys.stderr.write("fetch failed: %s\n" % e)
    # An address of the tool's own, which DLP must still redact.
    sys.stderr.write("client 81.2.69.142 connected\n")
    return {"done": True}
