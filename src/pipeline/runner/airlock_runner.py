"""Airlock's tool runner: runs inside the sandbox and speaks the tool protocol.

The arguments arrive as one JSON object on stdin; the result leaves as one JSON object on
stdout. Anything the tool prints goes to stderr (its log), so it cannot corrupt the result.

    python3 -I -S airlock_runner.py module /tool/summarise.py   # defines run(args) -> dict
    python3 -I -S airlock_runner.py code                        # {"code": "...", "arguments": {...}}

For `code`, the source runs as __main__; if it defines run(args), the result is
{"result": run(arguments), "stdout": what it printed}, otherwise {"stdout": what it printed}.

It runs with -I (isolated: no environment variables, no user site) and -S (no `site`: start-up
is a third faster); Debian's dist-packages directory is added by hand so packaged libraries
still import. Its own imports are kept to json and sys for the same reason.
"""
import json
import sys

sys.path.append("/usr/lib/python3/dist-packages")


def fail(message):
    sys.stderr.write("airlock runner: " + message + "\n")
    sys.exit(2)


def run_module(path, arguments):
    namespace = {"__name__": "tool", "__file__": path}
    try:
        with open(path, "rb") as source:
            code = compile(source.read(), path, "exec")
    except (OSError, SyntaxError) as e:
        fail("cannot load %s: %s" % (path, e))
    exec(code, namespace)
    if not callable(namespace.get("run")):
        fail(path + " does not define run(args)")
    return namespace["run"](arguments)


def run_code(request):
    import io  # only code mode needs it

    if not isinstance(request, dict) or not isinstance(request.get("code"), str):
        fail('python-code tools take {"code": "...", "arguments": {...}}')
    namespace = {"__name__": "__main__"}
    printed = io.StringIO()
    sys.stdout = printed
    try:
        exec(compile(request["code"], "<tool code>", "exec"), namespace)
        result = {}
        if callable(namespace.get("run")):
            result["result"] = namespace["run"](request.get("arguments", {}))
    finally:
        sys.stdout = sys.stderr
    result["stdout"] = printed.getvalue()
    return result


def main():
    if len(sys.argv) < 2:
        fail("usage: airlock_runner.py module FILE | code")
    try:
        request = json.load(sys.stdin)
    except ValueError as e:
        fail("the arguments are not JSON: " + str(e))
    protocol_out = sys.stdout
    sys.stdout = sys.stderr  # what the tool prints is its log
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
