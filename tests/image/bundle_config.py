"""Edits the bundle's config.json (umoci's, from the image's config) into the pod of
deploy/kubernetes/30-daemon.yaml: read-only root, the config, TLS Secret and tool ConfigMap
read-only at their mount paths, the data volume writable, /tmp a tmpfs, no capabilities, no new
privileges; the host's network namespace (the test's own: runsc --network=host).
    bundle_config.py CONFIG_JSON WORK"""
import json
import sys

path, work = sys.argv[1], sys.argv[2]
spec = json.load(open(path))
process = spec["process"]
assert process["user"]["uid"] == 10001 and process["user"]["gid"] == 10001, process["user"]
assert process["args"][0] == "/usr/local/bin/airlock", process["args"]
process["terminal"] = False
process["noNewPrivileges"] = True
process["capabilities"] = {k: [] for k in ("bounding", "effective", "inheritable", "permitted", "ambient")}
spec["root"]["readonly"] = True


def bind(source, destination, readonly):
    options = ["rbind", "nosuid", "nodev"] + (["ro"] if readonly else ["rw"])
    return {"destination": destination, "type": "bind", "source": source, "options": options}


spec["mounts"] = [m for m in spec["mounts"] if m["destination"] not in ("/tmp",)] + [
    bind(f"{work}/config", "/etc/airlock", True),
    bind(f"{work}/tls", "/etc/airlock-tls", True),
    bind(f"{work}/tools", "/opt/airlock/tools", True),
    bind(f"{work}/kube", "/etc/airlock-kube", True),
    bind(f"{work}/data", "/var/lib/airlock", False),
    {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "size=256m"]},
]
spec["linux"]["namespaces"] = [n for n in spec["linux"]["namespaces"] if n["type"] != "network"]
json.dump(spec, open(path, "w"), indent=2)
