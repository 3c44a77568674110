import json
import urllib.request

def fetch_all(page_size=50):
    results, page = [], 1
    while True:
        url = f"https://api.example.com/v1/records?page={page}&size={page_size}"
        with urllib.request.urlopen(url, timeout=15) as r:
            batch = json.load(r)
        results.extend(batch["records"])
        if not batch.get("next"):
            return results
        page += 1

print(len(fetch_all()))
