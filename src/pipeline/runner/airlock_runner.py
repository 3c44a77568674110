"""Airlock's tool runner: runs inside the sandbox and speaks the tool protocol.

The arguments arrive as one JSON object on stdin; the result leaves as one JSON object on
stdout. Anything the tool prints goes to stderr (its log), so it cannot corrupt the result.

    python3 -I -S airlock_runner.py module /tool/summarise.py   # defines run(args) -> dict
    python3 -I -S airlock_runner.py code                        # {"code": "...", "arguments": {...}}
    python3 -I -S airlock_runner.py template /tool/summarise.py # a warm template (below)
    python3 -I -S airlock_runner.py code-template               # a python-code tool's template

For `code`, the source runs as __main__; if it defines run(args), the result is
{"result": run(arguments), "stdout": what it printed}, otherwise {"stdout": what it printed}.
If it raises, the runner writes {"code_error": {name, value, line, traceback, stdout}} instead
and exits with status 1 (CODE_ERROR_STATUS). In code mode the protocol channel is a private
copy of descriptor 1 that no child inherits, and descriptor 1 itself becomes the log.

It runs with -I (isolated: no environment variables, no user site) and -S (no `site`: start-up
is a third faster); Debian's dist-packages directory is added by hand so packaged libraries
still import. For the same reason it reads and writes JSON with CPython's C accelerator
`_json` directly: `import json` pulls in `re`, which costs more than the rest of the runner.
Where `_json` is missing it falls back to `json` (tests/pipeline/runner_test.py checks that
both give the same answers).

In template mode (docs/warm-start.md) the runner imports the tool, says it is ready on its
control socket (descriptor 7) and then, per call, libairlock_warm.so receives the call and
starts its init in fresh namespaces, which makes its cgroup, tmpfs and policy and forks the
tool process, which returns here from airlock_warm_start(); it then
reads {"env": {...}, "arguments": {...}} on stdin, puts env (the call's credentials) in
os.environ, and runs the tool once, as a cold run would. A python-code tool's template
(code-template) imports no tool: its calls' arguments are {"code", "arguments"}, run by
run_code exactly as in code mode.
"""
import sys

sys.path.append("/usr/lib/python3/dist-packages")


def _json_codec():
    """Returns (loads, dumps) built on _json, or on json where _json is not there."""
    try:
        import _json
    except ImportError:
        import json

        return json.loads, lambda value: json.dumps(value, separators=(",", ":"))

    class Context:  # what json.decoder.JSONDecoder gives the C scanner
        strict = True
        object_hook = None
        object_pairs_hook = None
        parse_float = float
        parse_int = int
        memo = {}

        @staticmethod
        def parse_constant(name):
            return {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}[name]

    scanner = _json.make_scanner(Context)
    whitespace = " \t\n\r"

    def loads(text):
        start = len(text) - len(text.lstrip(whitespace))
        try:
            value, end = scanner(text, start)
        except StopIteration as e:
            raise ValueError("not JSON at character %d" % e.value) from None
        if text[end:].strip(whitespace):
            raise ValueError("extra data after the JSON value at character %d" % end)
        return value

    def default(value):
        raise TypeError("%s is not JSON serializable" % type(value).__name__)

    encoder = _json.make_encoder({}, default, _json.encode_basestring_ascii, None, ":", ",", False, False, True)

    def dumps(value):
        return "".join(encoder(value, 0))

    return loads, dumps


json_loads, json_dumps = _json_codec()


def fail(message):
    sys.stderr.write("airlock runner: " + message + "\n")
    sys.exit(2)


def load_module(path):
    """Imports the tool's file; returns its run."""
    namespace = {"__name__": "tool", "__file__": path}
    try:
        with open(path, "rb") as source:
            code = compile(source.read(), path, "exec")
    except (OSError, SyntaxError) as e:
        fail("cannot load %s: %s" % (path, e))
    exec(code, namespace)
    if not callable(namespace.get("run")):
        fail(path + " does not define run(args)")
    return namespace["run"]


CODE_FILENAME = "<code>"  # what a traceback calls the submitted code
CODE_ERROR_STATUS = 1  # the exit status of a cell that raised: its report is on the protocol channel


def run_code(request, protocol_out):
    if not isinstance(request, dict) or not isinstance(request.get("code"), str):
        fail('python-code tools take {"code": "...", "arguments": {...}}')
    result = {}
    printed = run_cell(request["code"], request.get("arguments", {}), result, protocol_out)
    result["stdout"] = printed.getvalue()
    return result


def run_cell(source, arguments, result, protocol_out):
    """Runs source as __main__, and its run(arguments) if it defines one (into
    result["result"]); returns what it printed (a StringIO). A cell that raises is reported
    on protocol_out (report_code_error), or, without one (a rehearsal), raises."""
    import io  # only code mode needs it

    _remember_source(source)
    namespace = {"__name__": "__main__"}
    printed = io.StringIO()
    sys.stdout = printed
    try:
        exec(compile(source, CODE_FILENAME, "exec"), namespace)
        if callable(namespace.get("run")):
            result["result"] = namespace["run"](arguments)
    except Exception as e:  # SystemExit and KeyboardInterrupt end the run as they would
        sys.stdout = sys.stderr
        if protocol_out is None:
            raise
        report_code_error(e, printed.getvalue(), protocol_out)
    finally:
        sys.stdout = sys.stderr
    return printed


# What a prepared python-code child runs while it waits for its call (serve_warm_call): a cell
# of the kind a model writes, so that the copy-on-write faults and first-use work of the
# compiler, exec and run(args) (interned names, the type cache, allocator pools, linecache,
# StringIO, the GC) happen before the input exists rather than on the call's path (issue 36:
# about 8 ms of a warm call here). It runs in a namespace of its own and prints into a buffer
# that is dropped: the call's cell gets none of its names nor its output (its objects are
# garbage until a collection, as the template's leftovers are), and linecache's entry for
# <code> is replaced by the call's own source before that runs.
REHEARSAL_CELL = """\
import sys
items = [{"name": "x%d" % i, "size": i * 2.5, "ok": i % 2 == 0} for i in range(12)]
sizes = sorted((it["size"] for it in items if it["ok"]), reverse=True)
total = sum(sizes) + len(items) + max(range(10)) + abs(-1) + min(3, 4) + round(2.5)
words = " ".join(str(s) for s in sizes[:3]).split()
text = f"total={total:.1f} first={words[0]!r} {dict(a=1)} {set([1])} {tuple(words)}"
print(text, len(text), sep="; ")
class Acc:
    def __init__(self):
        self.seen = {}
    def add(self, key, value=1):
        self.seen[key] = self.seen.get(key, 0) + value
        return self
def run(args):
    acc = Acc()
    for key, value in args.items():
        try:
            acc.add(key, int(value))
        except (TypeError, ValueError) as e:
            acc.add("errors", len(str(e)))
    return {"result": acc.seen, "total": total, "text": text, "n": len(args), "ok": True}
"""


def rehearse_code():
    """A python-code call's path once, on REHEARSAL_CELL (above)."""
    try:
        result = {}
        printed = run_cell(REHEARSAL_CELL, {"n": 1, "s": "x", "f": 2.5, "l": [1], "b": None}, result, None)
        result["stdout"] = printed.getvalue()
        json_dumps(result)
    except Exception:
        pass  # it only warms; the call itself reports what goes wrong
    finally:
        sys.stdout = sys.stderr


def _remember_source(source):
    """Lets tracebacks show the submitted code's lines, as they show a file's."""
    import linecache

    linecache.cache[CODE_FILENAME] = (len(source), None, source.splitlines(True), CODE_FILENAME)


def report_code_error(error, printed, protocol_out):
    """The cell raised: {"code_error": {name, value, line, traceback, stdout}} on the protocol
    channel (which neither print() nor a child process reaches), then the exit status that
    says so. The daemon reads a report only from a run that ended with that status."""
    import traceback

    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == CODE_FILENAME]
    line = frames[-1].lineno if frames else None
    if isinstance(error, SyntaxError) and error.filename == CODE_FILENAME:
        line = error.lineno
    lines = traceback.format_exception(type(error), error, _from_code(error.__traceback__))
    report = {
        "name": type(error).__name__,
        "value": str(error),
        "line": line,
        "traceback": "".join(lines).splitlines(),
        "stdout": printed,
    }
    sys.stderr.write("".join(lines))  # the log keeps it too
    sys.stderr.flush()
    protocol_out.write(json_dumps({"code_error": report}) + "\n")
    protocol_out.flush()
    import os

    os._exit(CODE_ERROR_STATUS)


def _from_code(tb):
    """The traceback from the first frame of the submitted code: the runner's own are noise."""
    while tb is not None and tb.tb_frame.f_code.co_filename != CODE_FILENAME:
        tb = tb.tb_next
    return tb


def private_protocol_channel():
    """Moves the protocol channel off descriptor 1 to a descriptor no child inherits, and
    points 1 at the log: what the code or a process it starts writes to its stdout can never
    pass for the runner's result or its error report."""
    import os

    channel = os.dup(1)  # not inheritable (PEP 446)
    os.dup2(2, 1)
    return open(channel, "w", encoding="utf-8", closefd=True)


WARM_CONTROL_FD = 7
WARM_LIBRARY = "/airlock-warm/libairlock_warm.so"


def serve_template(path):
    """A warm template: import once, then one fresh sandbox (a child of ours) per call.
    Without a path it is a python-code tool's: run is None and each call runs its code."""
    import atexit  # end_warm_call's: imported per call, it cost half a module call's page faults
    import ctypes
    import os

    warm = ctypes.CDLL(WARM_LIBRARY)
    if path is None:
        import linecache, traceback  # what run_code imports, so that no call pays for it
        run = None
    else:
        run = load_module(path)
    sys.stdout.flush()
    sys.stderr.flush()
    os.write(WARM_CONTROL_FD, b"R")
    while True:
        got = warm.airlock_warm_receive(WARM_CONTROL_FD)
        if got == 0:
            return  # retired: the supervisor closed the control socket
        if got == 1 and warm.airlock_warm_start() == 0:
            return serve_warm_call(run)  # the call's tool process
        warm.airlock_warm_reap()  # the inits of calls that have ended, and their stacks


def serve_warm_call(run):
    import os

    # A child may be prepared well before its call: the first writes to the template's pages
    # its JSON path makes (copy-on-write faults) happen now, before the input exists. A
    # python-code child also takes its protocol channel and rehearses a cell (rehearse_code).
    json_dumps(json_loads('{"env": {}, "arguments": {"a": [1, 2.5, "x", true, null]}}'))
    protocol_out = None
    if run is None:
        protocol_out = private_protocol_channel()
        sys.stdout = sys.stderr
        rehearse_code()
    request = read_request()
    if not isinstance(request, dict) or not isinstance(request.get("env"), dict):
        fail('a warm call takes {"env": {...}, "arguments": ...}')
    os.environ.update(request["env"])  # the call's credentials, as a cold run has them
    finish(*run_once(run, request.get("arguments", {}), protocol_out))
    end_warm_call()


def run_once(run, request, protocol_out=None):
    """One call, cold or warm: a module's run(request), or (run is None) the code in request.
    Returns (result, the protocol channel); what the tool prints goes to the log. A warm
    python-code call's channel was taken before its input came (serve_warm_call)."""
    if protocol_out is None:
        protocol_out = sys.stdout
        sys.stdout = sys.stderr  # what the tool prints is its log
        if run is None:
            protocol_out = private_protocol_channel()
    if run is not None:
        return run(request), protocol_out
    return run_code(request, protocol_out), protocol_out


def end_warm_call():
    """What the interpreter's shutdown does that a tool may rely on (its threads joined, its
    atexit functions run, output flushed), without the teardown of every module and object,
    which costs about as much as the rest of a warm call: the process is destroyed anyway."""
    import os

    threading = sys.modules.get("threading")
    if threading is not None:
        threading._shutdown()
    import atexit

    atexit._run_exitfuncs()
    sys.stderr.flush()  # finish() flushed the protocol channel
    os._exit(0)


def read_request():
    try:
        return json_loads(sys.stdin.read())
    except ValueError as e:
        fail("the arguments are not JSON: " + str(e))


def main():
    if len(sys.argv) < 2:
        fail("usage: airlock_runner.py module FILE | code | template FILE | code-template")
    if sys.argv[1] == "template" and len(sys.argv) == 3:
        return serve_template(sys.argv[2])
    if sys.argv[1] == "code-template" and len(sys.argv) == 2:
        return serve_template(None)
    if sys.argv[1] == "module" and len(sys.argv) == 3:
        path = sys.argv[2]
        run = lambda request: load_module(path)(request)  # imported once stdout is the log
    elif sys.argv[1] == "code":
        run = None
    else:
        fail("unknown mode " + sys.argv[1])
    finish(*run_once(run, read_request()))


def finish(result, protocol_out):
    if not isinstance(result, dict):
        fail("run(args) returned %s, not a dict" % type(result).__name__)
    try:
        text = json_dumps(result)
    except (TypeError, ValueError) as e:
        fail("the result is not JSON: %s" % e)
    protocol_out.write(text + "\n")
    protocol_out.flush()


if __name__ == "__main__":
    main()
