import json
import os

scratch = "/tmp/scratch.json"
with open(scratch, "w") as f:
    json.dump({"step": 1}, f)
with open(scratch) as f:
    print(json.load(f))
print(os.path.join("/work", "out"), os.environ.get("HOME"))
