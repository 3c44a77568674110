import json


def main():
    data = {"ok": True}
    with open("result.json", "w") as f:
        json.dump(data, f)
    return 0


if __name__ == "__main__":
    main()
