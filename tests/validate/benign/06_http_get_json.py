import json
import urllib.request

with urllib.request.urlopen("https://api.example.com/v1/status", timeout=10) as response:
    status = json.load(response)

print(status.get("state", "unknown"))
