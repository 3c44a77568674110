import math

def norm(vector):
    return math.sqrt(sum(x * x for x in vector))

def cosine(a, b):
    return sum(x * y for x, y in zip(a, b)) / (norm(a) * norm(b))

print(round(cosine([1, 2, 3], [3, 2, 1]), 4), math.pi)
