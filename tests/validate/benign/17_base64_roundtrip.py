import base64

data = "hello, tool".encode("utf-8")
encoded = base64.b64encode(data).decode("ascii")
decoded = base64.b64decode(encoded).decode("utf-8")
assert decoded == "hello, tool"
print(encoded)
