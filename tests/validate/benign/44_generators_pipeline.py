def read_numbers(path):
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                yield float(line)

def running_total(values):
    total = 0.0
    for value in values:
        total += value
        yield total

print(list(running_total(read_numbers("numbers.txt")))[-1:])
