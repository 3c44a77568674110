import copy
import json

DEFAULTS = {"retries": 3, "endpoints": {"primary": "a", "backup": "b"}}

def with_overrides(overrides):
    config = copy.deepcopy(DEFAULTS)
    config.update(overrides)
    return config

print(json.dumps(with_overrides({"retries": 5})))
