from collections import Counter

with open("ages.txt") as f:
    ages = [int(line) for line in f if line.strip()]

buckets = Counter(age // 10 * 10 for age in ages)
for start in sorted(buckets):
    print(f"{start:3}-{start + 9:3} {'#' * buckets[start]}")
