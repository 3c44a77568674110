import json

with open("input.json") as f:
    records = json.load(f)

total = sum(r.get("amount", 0) for r in records)
summary = {"count": len(records), "total": total}
with open("summary.json", "w") as f:
    json.dump(summary, f, indent=2)
print(json.dumps(summary))
