import difflib

with open("old.txt") as a, open("new.txt") as b:
    old, new = a.readlines(), b.readlines()

diff = difflib.unified_diff(old, new, fromfile="old.txt", tofile="new.txt")
with open("changes.diff", "w") as out:
    out.writelines(diff)
