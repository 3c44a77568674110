from enum import Enum

class Status(Enum):
    OPEN = "open"
    CLOSED = "closed"

def parse(value):
    try:
        return Status(value)
    except ValueError:
        return Status.OPEN

print(parse("closed").name, parse("other").name)
