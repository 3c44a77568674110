"""The tool runner (src/pipeline/runner/airlock_runner.py): its fast JSON path must answer
exactly as the json module does, and the protocol must hold (a tool's prints go to stderr)."""
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

RUNNER = sys.argv.pop(1)
sys.path.insert(0, os.path.dirname(RUNNER))
import airlock_runner  # noqa: E402

SAMPLES = [
    '{"a": 1}', "[]", "{}", '"x"', "0", "-0", "1e400", "123456789012345678901234567890", "1.5e-7",
    '"\\u00e9\\ud83d\\ude00\\n\\t\\"\\\\"', '{"nested": [[[[{"k": [null, true, false]}]]]]}',
    '  \n\t{"spaced" : [ 1 , 2 ] }\r\n ', '{"dup": 1, "dup": 2}', "NaN", "[Infinity, -Infinity]",
    '"\\ud800"', '{"unicode": "日本語"}',
]
INVALID = ["", "{", '{"a": }', "[1,]", "tru", '{"a": 1} x', "'single'", '"\\x"', "01", "[1] [2]", "\\x00"]


def same(a, b):
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


class FastJson(unittest.TestCase):
    def test_loads_like_json(self):
        for text in SAMPLES:
            with self.subTest(text=text):
                self.assertTrue(same(airlock_runner.json_loads(text), json.loads(text)))

    def test_rejects_what_json_rejects(self):
        for text in INVALID:
            with self.subTest(text=text):
                with self.assertRaises(ValueError):
                    json.loads(text)
                with self.assertRaises(ValueError):
                    airlock_runner.json_loads(text)

    def test_dumps_round_trip(self):
        for text in SAMPLES:
            value = json.loads(text)
            with self.subTest(text=text):
                self.assertTrue(same(json.loads(airlock_runner.json_dumps(value)), value))
        self.assertEqual(airlock_runner.json_dumps({"a": [1, 2.5, "é"]}), '{"a":[1,2.5,"\\u00e9"]}')
        with self.assertRaises(TypeError):
            airlock_runner.json_dumps({"set": {1}})


class Protocol(unittest.TestCase):
    def run_tool(self, source, stdin):
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write(source)
        try:
            return subprocess.run([sys.executable, "-I", "-S", RUNNER, "module", f.name], input=stdin,
                                  capture_output=True, text=True, timeout=30)
        finally:
            os.unlink(f.name)

    def test_prints_go_to_stderr_and_the_result_to_stdout(self):
        r = self.run_tool("def run(args):\n    print('noise')\n    return {'n': args['n'] + 1}\n", '{"n": 41}')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout), {"n": 42})
        self.assertIn("noise", r.stderr)

    def test_bad_input_and_bad_results_fail(self):
        self.assertEqual(self.run_tool("def run(a):\n    return {}\n", "not json").returncode, 2)
        self.assertEqual(self.run_tool("def run(a):\n    return [1]\n", "{}").returncode, 2)
        self.assertEqual(self.run_tool("def run(a):\n    return {'s': {1}}\n", "{}").returncode, 2)
        self.assertEqual(self.run_tool("x = 1\n", "{}").returncode, 2)


if __name__ == "__main__":
    unittest.main()
