import json
import urllib.request

payload = json.dumps({"name": "report", "rows": 42}).encode()
request = urllib.request.Request(
    "https://api.example.com/v1/reports",
    data=payload,
    headers={"Content-Type": "application/json"},
    method="POST",
)
with urllib.request.urlopen(request, timeout=10) as response:
    print(response.status)
