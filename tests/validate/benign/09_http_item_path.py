import json
import urllib.request

def fetch_item(item_id):
    with urllib.request.urlopen(f"https://api.example.com/items/{item_id}") as r:
        return json.load(r)

items = [fetch_item(i) for i in (1, 2, 3)]
with open("items.json", "w") as f:
    json.dump(items, f)
