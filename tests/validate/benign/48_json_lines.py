import json

count = 0
with open("events.jsonl") as src, open("errors.jsonl", "w") as dst:
    for line in src:
        event = json.loads(line)
        if event.get("level") == "error":
            dst.write(json.dumps(event) + "\n")
            count += 1
print(f"{count} errors")
