import hashlib
import json

with open("docs.json") as f:
    documents = json.load(f)

seen, unique = set(), []
for doc in documents:
    key = hashlib.md5(doc["body"].encode()).hexdigest()
    if key not in seen:
        seen.add(key)
        unique.append(doc)
print(len(documents) - len(unique), "duplicates removed")
