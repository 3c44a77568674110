import uuid
import json

records = [{"id": str(uuid.uuid4()), "n": n} for n in range(5)]
with open("/tmp/records.json", "w") as f:
    json.dump(records, f)
print(len(records))
