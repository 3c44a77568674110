import json
import urllib.error
import urllib.request

def get_user(user_id):
    try:
        with urllib.request.urlopen(f"https://api.example.com/users/{user_id}") as r:
            return json.load(r)
    except urllib.error.HTTPError as err:
        return {"error": err.code}
    except urllib.error.URLError as err:
        return {"error": str(err.reason)}

print(get_user(7))
