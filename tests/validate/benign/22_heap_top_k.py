import heapq

def top_k(values, k):
    return heapq.nlargest(k, values)

scores = {"ann": 91, "bob": 78, "cy": 85, "di": 99}
best = top_k(scores.items(), 2)
print(sorted(best, key=lambda kv: kv[1], reverse=True))
