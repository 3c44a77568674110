def handle(command):
    match command:
        case {"op": "add", "a": a, "b": b}:
            return a + b
        case {"op": "neg", "a": a}:
            return -a
        case [first, *rest]:
            return first
        case _:
            return None

print(handle({"op": "add", "a": 1, "b": 2}), handle([9, 8]))
