from collections import Counter
import re

with open("text.txt", encoding="utf-8") as f:
    words = re.findall(r"[a-z']+", f.read().lower())

for word, n in Counter(words).most_common(10):
    print(f"{word:>15} {n}")
