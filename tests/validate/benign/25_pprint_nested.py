import pprint

tree = {"root": {"left": {"value": 1}, "right": {"value": 2, "children": [3, 4, 5]}}}
pprint.pprint(tree, width=40)
text = pprint.pformat(tree)
with open("tree.txt", "w") as f:
    f.write(text)
