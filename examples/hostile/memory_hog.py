# A "tool" that allocates 10 GB.
data = bytearray(10 * 1024**3)
print(len(data))
