import json
import urllib.request

with open("/work/results.json") as f:
    results = json.load(f)

body = json.dumps({"results": results}).encode("utf-8")
req = urllib.request.Request("https://api.example.com/v1/results", data=body, method="PUT")
req.add_header("Content-Type", "application/json")
with urllib.request.urlopen(req) as response:
    print(response.status, response.reason)
