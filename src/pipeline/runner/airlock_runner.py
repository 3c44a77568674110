"""Airlock's tool runner: runs inside the sandbox and speaks the tool protocol.

The arguments arrive as one JSON object on stdin; the result leaves as one JSON object on
stdout. Anything the tool prints goes to stderr (its log), so it cannot corrupt the result.

    airlock_runner.py module /tool/summarise.py   # a module defining run(args) -> dict
    airlock_runner.py code                        # stdin: {"code": "...", "arguments": {...}}

For `code`, the source runs as __main__; if it defines run(args), the result is
{"result": run(arguments), "stdout": what it printed}, otherwise {"stdout": what it printed}.
"""
import contextlib
import importlib.util
import io
import json
import sys


def fail(message):
    sys.stderr.write("airlock runner: " + message + "\n")
    sys.exit(2)


def run_module(path, arguments):
    spec = importlib.util.spec_from_file_location("tool", path)
    if spec is None or spec.loader is None:
        fail("cannot load " + path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not callable(getattr(module, "run", None)):
        fail(path + " does not define run(args)")
    return module.run(arguments)


def run_code(request):
    if not isinstance(request, dict) or not isinstance(request.get("code"), str):
        fail("python-code tools take {\"code\": \"...\", \"arguments\": {...}}")
    namespace = {"__name__": "__main__"}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(request["code"], "<tool code>", "exec"), namespace)
        result = None
        if callable(namespace.get("run")):
            result = {"result": namespace["run"](request.get("arguments", {}))}
    out = result or {}
    out["stdout"] = printed.getvalue()
    return out


def main():
    if len(sys.argv) < 2:
        fail("usage: airlock_runner.py module FILE | code")
    try:
        request = json.load(sys.stdin)
    except ValueError as e:
        fail("the arguments are not JSON: " + str(e))
    protocol_out = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):
        if sys.argv[1] == "module" and len(sys.argv) == 3:
            result = run_module(sys.argv[2], request)
        elif sys.argv[1] == "code":
            result = run_code(request)
        else:
            fail("unknown mode " + sys.argv[1])
    if not isinstance(result, dict):
        fail("run(args) returned %s, not a dict" % type(result).__name__)
    json.dump(result, protocol_out)
    protocol_out.write("\n")


if __name__ == "__main__":
    main()
