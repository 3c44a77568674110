# A session's code interpreter (docs/sessions.md, "Code"): one Python process that runs
# cells and keeps their variables, imports and files between them. The daemon starts it as an
# exec in the session (python3 -c <this file> [module ...]: the template's preload modules,
# imported before it says it is ready) and speaks JSON lines with it on its stdin and
# stdout; a cell's own output goes to two files, never to that channel.
#
# request:  {"id": 1, "code": "...", "max_output": 65536, "env": {"NAME": "value"}}
# answer:   {"id": 1, "stdout": "...", "stderr": "...", "stdout_bytes": n, "stderr_bytes": n,
#            "result": {"repr": "...", "json": <value>}?,
#            "error": {"name": "...", "value": "...", "traceback": ["..."]}?,
#            "images": [{"type": "image/png", "data": "<base64>"}]}
#
# What this process says of a cell is the cell's own account (its code runs in this very
# process and could write here): the daemon decides the verdict, the usage and the limits
# from the sandbox, never from these lines.
import ast
import base64
import io
import json
import linecache
import os
import signal
import sys
import tempfile
import traceback

MAX_REPR = 65536
CELL_GLOBALS = {"__name__": "__main__", "__builtins__": __builtins__}


def channel():
    """The daemon's channel: stdin and stdout moved above the descriptors a cell uses, closed
    on exec (a program the cell starts never has them); 0 becomes /dev/null."""
    requests = os.fdopen(os.dup(0), "rb", buffering=0)
    answers = os.fdopen(os.dup(1), "wb", buffering=0)
    for f in (requests, answers):
        os.set_inheritable(f.fileno(), False)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return requests, answers


class Capture:
    """A cell's stdout or stderr: descriptor `fd` points at a file of its own, so what a program
    the cell starts prints is caught too; read back and emptied after each cell."""

    def __init__(self, fd):
        self.fd = fd
        self.file = tempfile.TemporaryFile(dir=os.environ.get("TMPDIR", "/tmp"))
        os.dup2(self.file.fileno(), fd)

    def take(self, limit):
        size = os.lseek(self.fd, 0, os.SEEK_END)
        os.lseek(self.fd, 0, os.SEEK_SET)
        data = os.read(self.fd, min(size, limit)) if size else b""
        os.ftruncate(self.fd, 0)
        os.lseek(self.fd, 0, os.SEEK_SET)
        return data.decode("utf-8", "replace"), size


def interruptible():
    """SIGINT stops the running cell (KeyboardInterrupt) and nothing else: between cells it is
    ignored, so an interrupt that comes late never ends the interpreter."""
    state = {"in_cell": False}

    def on_interrupt(signum, frame):
        if state["in_cell"]:
            raise KeyboardInterrupt()

    signal.signal(signal.SIGINT, on_interrupt)
    return state


def compile_cell(code, name):
    """The cell as a module, and its last statement apart when it is an expression (its value
    is the cell's result). Line numbers are the cell's own."""
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    tree = ast.parse(code, filename=name, mode="exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(body=tree.body.pop().value)
    body = compile(tree, name, "exec")
    return body, compile(last, name, "eval") if last is not None else None


def describe_error(error, name):
    """{name, value, traceback}: the frames from the cell on (not this file's), with their
    line numbers in the cell."""
    tb = error.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != name:
        tb = tb.tb_next
    if isinstance(error, SyntaxError):
        lines = traceback.format_exception_only(type(error), error)
    else:
        lines = traceback.format_exception(type(error), error, tb)
    return {"name": type(error).__name__, "value": str(error),
            "traceback": [line.rstrip("\n") for chunk in lines for line in chunk.splitlines()]}


def describe_result(value):
    result = {"repr": repr(value)[:MAX_REPR]}
    try:
        text = json.dumps(value, allow_nan=False)
        if len(text) <= MAX_REPR:
            result["json"] = value
    except (TypeError, ValueError, RecursionError):
        pass
    return result


def figures():
    """The matplotlib figures the cell left open, as PNG, then closed (when it used pyplot)."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return []
    images = []
    for number in pyplot.get_fignums():
        buffer = io.BytesIO()
        pyplot.figure(number).savefig(buffer, format="png")
        images.append({"type": "image/png", "data": base64.b64encode(buffer.getvalue()).decode("ascii")})
    pyplot.close("all")
    return images


def run_cell(request, state):
    os.environ.update(request.get("env", {}))  # the session's credentials as they are now
    name = "<cell-%d>" % request["id"]
    answer = {"id": request["id"]}
    state["in_cell"] = True
    try:
        body, last = compile_cell(request["code"], name)
        exec(body, CELL_GLOBALS)
        if last is not None:
            value = eval(last, CELL_GLOBALS)
            if value is not None:
                answer["result"] = describe_result(value)
    except BaseException as error:  # SystemExit and KeyboardInterrupt are a cell's errors too
        state["in_cell"] = False
        answer["error"] = describe_error(error, name)
    finally:
        state["in_cell"] = False
    try:
        answer["images"] = figures()
    except Exception as error:
        answer["images"] = []
        answer.setdefault("error", describe_error(error, name))
    return answer


def preload(names, answers):
    """The template's preload modules (sys.argv), imported before the first cell; when one
    cannot be, the daemon is told which and why, and this process ends."""
    import importlib

    for name in names:
        try:
            importlib.import_module(name)
        except BaseException as error:
            why = "preload %s: %s: %s" % (name, type(error).__name__, error)
            answers.write(json.dumps({"ready": False, "error": why}).encode("utf-8") + b"\n")
            os._exit(1)


def main():
    os.environ.setdefault("MPLBACKEND", "Agg")  # figures are drawn to memory, never a display
    requests, answers = channel()
    outputs = (Capture(1), Capture(2))
    sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", buffering=0, closefd=False), write_through=True)
    sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", buffering=0, closefd=False), write_through=True)
    preload(sys.argv[1:], answers)
    state = interruptible()
    json.dumps(run_cell({"id": 0, "code": "None"}, state))  # the first cell's paths, run once now
    CELL_GLOBALS.clear()
    CELL_GLOBALS.update({"__name__": "__main__", "__builtins__": __builtins__})
    for output in outputs:
        output.take(0)  # what an import printed is no cell's output
    answers.write(b'{"ready": true}\n')
    for line in requests:
        request = json.loads(line)
        answer = run_cell(request, state)
        sys.stdout.flush()
        sys.stderr.flush()
        limit = int(request.get("max_output", 65536))
        answer["stdout"], answer["stdout_bytes"] = outputs[0].take(limit)
        answer["stderr"], answer["stderr_bytes"] = outputs[1].take(limit)
        answers.write(json.dumps(answer).encode("utf-8") + b"\n")


main()
