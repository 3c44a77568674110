def run(args):
    hog = []
    while True:
        hog.append(bytearray(16 << 20))
