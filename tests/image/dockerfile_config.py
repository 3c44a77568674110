"""The Dockerfile's runtime configuration (USER, WORKDIR, ENV, EXPOSE, ENTRYPOINT, CMD) against
the config of the image scripts/build-image.sh made: the two are kept equivalent (no Docker
engine runs here to build the Dockerfile itself). Exits 1 naming each difference.
    dockerfile_config.py DOCKERFILE OCI_LAYOUT TAG"""
import json
import pathlib
import shlex
import sys

dockerfile, layout, tag = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]


def blob(digest):
    algorithm, hexdigest = digest.split(":")
    return json.loads((layout / "blobs" / algorithm / hexdigest).read_text())


index = json.loads((layout / "index.json").read_text())
manifest = next(m for m in index["manifests"]
                if m["annotations"]["org.opencontainers.image.ref.name"] == tag)
image = blob(blob(manifest["digest"])["config"]["digest"])["config"]

# The last stage's instructions (after the last FROM), continuation lines joined.
text = dockerfile.read_text().replace("\\\n", " ")
lines = [l.strip() for l in text.splitlines() if l.strip() and not l.strip().startswith("#")]
last = max(i for i, l in enumerate(lines) if l.upper().startswith("FROM "))
docker = {"Env": [], "ExposedPorts": {}}
for line in lines[last + 1:]:
    word, _, rest = line.partition(" ")
    word = word.upper()
    if word == "USER":
        docker["User"] = rest.strip()
    elif word == "WORKDIR":
        docker["WorkingDir"] = rest.strip()
    elif word == "ENV":
        docker["Env"] += shlex.split(rest)
    elif word == "EXPOSE":
        docker["ExposedPorts"].update({p: {} for p in rest.split()})
    elif word in ("ENTRYPOINT", "CMD"):
        docker["Entrypoint" if word == "ENTRYPOINT" else "Cmd"] = json.loads(rest)

problems = [f"{key}: Dockerfile {docker.get(key)!r}, build-image.sh {image.get(key)!r}"
            for key in ("User", "WorkingDir", "Env", "ExposedPorts", "Entrypoint", "Cmd")
            if docker.get(key) != image.get(key)]
for p in problems:
    print("differs:", p)
if problems:
    sys.exit(1)
print("the Dockerfile's runtime configuration is the image's:", json.dumps(docker))
