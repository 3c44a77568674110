import random

rng = random.Random(42)
population = list(range(100))
sample = rng.sample(population, 10)
rng.shuffle(sample)
print(sample, rng.choice(sample))
