import urllib.request


def run(args):
    # Through the egress proxy: the address is not in the tool's rules, and the error is not caught.
    urllib.request.urlopen("http://10.1.2.3/", timeout=5)
    return {"done": True}
