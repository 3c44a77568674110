import os
import socket


def run(args):
    # A raw CONNECT through the egress proxy (HTTP_PROXY) to 127.0.0.1:args["port"] (the
    # address is not an argument: DLP would redact it); the proxy's status line comes back.
    proxy = os.environ["HTTP_PROXY"].split("//", 1)[-1].rstrip("/")
    host, port = proxy.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=10)
    target = "127.0.0.1:%d" % args["port"]
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
    return {"answer": s.recv(200).split(b"\r\n")[0].decode()}
