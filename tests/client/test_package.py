"""`pip install` of clients/python into a temp directory works (no network, no build
isolation: Debian's python3-pip and python3-setuptools), and the installed package is the
typed one: py.typed is there and `from airlock import Client` works from it alone."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.normpath(os.path.join(HERE, "..", "..", "clients", "python"))


class PipInstall(unittest.TestCase):
    def test_installs_into_a_target_directory_and_imports_from_there(self):
        with tempfile.TemporaryDirectory() as tmp:
            target, work = os.path.join(tmp, "site"), os.path.join(tmp, "src")
            # A copy of the sources: setuptools writes build/ and *.egg-info beside them.
            subprocess.run(["cp", "-r", PACKAGE, work], check=True)
            env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
            env.pop("PYTHONPATH", None)
            done = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps",
                                   "--no-build-isolation", "--target", target, work],
                                  capture_output=True, text=True, env=env, cwd=tmp)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            self.assertTrue(os.path.isfile(os.path.join(target, "airlock", "py.typed")))
            for module in ("client.py", "aio.py", "audit.py", "llm.py", "errors.py"):
                self.assertTrue(os.path.isfile(os.path.join(target, "airlock", module)), module)
            check = ("import airlock, sys\n"
                     "assert airlock.__file__.startswith(sys.argv[1]), airlock.__file__\n"
                     "from airlock import Client, AsyncClient\n"
                     "Client('http://127.0.0.1:8750', api_key='k')\n"
                     "try:\n"
                     "    Client('ftp://x', api_key='k')\n"
                     "except airlock.UsageError:\n"
                     "    print('ok')\n")
            ran = subprocess.run([sys.executable, "-c", check, target], capture_output=True, text=True,
                                 env=dict(env, PYTHONPATH=target), cwd=tmp)
            self.assertEqual(ran.stdout.strip(), "ok", ran.stdout + ran.stderr)


if __name__ == "__main__":
    unittest.main()
