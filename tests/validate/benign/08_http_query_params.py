import json
import urllib.parse
import urllib.request

params = urllib.parse.urlencode({"q": "airlock", "page": 2})
with urllib.request.urlopen(f"https://api.example.com/search?{params}") as response:
    results = json.loads(response.read().decode("utf-8"))
for item in results.get("items", []):
    print(item["title"])
