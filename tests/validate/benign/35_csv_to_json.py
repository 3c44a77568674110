import csv
import json

with open("sales.csv", newline="") as f:
    rows = list(csv.DictReader(f))

for row in rows:
    row["amount"] = float(row["amount"])

with open("sales.json", "w") as f:
    json.dump(rows, f, indent=1)
