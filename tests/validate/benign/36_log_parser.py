import re
from collections import defaultdict

LINE = re.compile(r"^(?P<level>INFO|WARN|ERROR) (?P<message>.*)$")
by_level = defaultdict(list)
with open("app.log") as f:
    for line in f:
        match = LINE.match(line.strip())
        if match:
            by_level[match.group("level")].append(match.group("message"))
print({level: len(msgs) for level, msgs in by_level.items()})
