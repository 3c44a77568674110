"""Airlock's parse worker: the target interpreter's own `ast` module, emitting JSON.

Runs inside an Airlock sandbox (no network, small limits). Modes:

  ast_dump.py serve      one request after another on stdin, one reply each on stdout
  ast_dump.py dump       one source on stdin, one reply on stdout (tests, cold benchmark)
  ast_dump.py exports M...   imports the modules M... together and describes each one's
                             attributes (modules, callables and where they come from)

Framing (serve): a request is "<n>\\n" followed by n bytes of source; a reply is "<n>\\n"
followed by n bytes of JSON. Replies:

  {"ok": true, "python": [3, 11], "tree": NODE, "identifiers": [...]}
  {"ok": false, "error": "syntax_error"|"too_deep"|"decode_error"|"internal",
   "message": "...", "line": L, "col": C}

NODE is {"_type": "Call", "lineno": 1, "col_offset": 0, <field>: NODE | [NODE...] | value}.
Fields that are None or empty lists are left out. `ctx` is given as its class name, and left
out when it is Load. A Constant's "value" is always a string: str as the text (lone
surrogates replaced, and "lossy": true), bytes decoded as latin-1, every other kind as its
repr; "vkind" names the kind ("bytes", "int", "float", "complex", "bool", "None",
"Ellipsis") and is left out for str.

"identifiers" lists identifiers whose NFKC normal form differs from how they are written (the
parser normalises them, so the tree alone cannot show the trick).
"""
import ast
import json
import sys
import unicodedata

MAX_DEPTH = 400
_fields_of = {}


class TooDeep(Exception):
    pass


def _constant(out, value):
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            out["value"] = value
        except UnicodeEncodeError:
            out["value"] = value.encode("utf-8", "replace").decode("utf-8")
            out["lossy"] = True
    elif isinstance(value, bytes):
        out["value"] = value.decode("latin-1")
        out["vkind"] = "bytes"
    elif value is None:
        out["value"] = "None"
        out["vkind"] = "None"
    elif value is Ellipsis:
        out["value"] = "..."
        out["vkind"] = "Ellipsis"
    else:
        out["value"] = repr(value)
        out["vkind"] = type(value).__name__


def _node(node, depth):
    if depth > MAX_DEPTH:
        raise TooDeep()
    cls = type(node)
    fields = _fields_of.get(cls)
    if fields is None:
        fields = _fields_of[cls] = cls._fields
    out = {"_type": cls.__name__}
    lineno = getattr(node, "lineno", None)
    if lineno is not None:
        out["lineno"] = lineno
        out["col_offset"] = node.col_offset
    for name in fields:
        value = getattr(node, name, None)
        if value is None:
            continue
        if name == "ctx":
            ctx_name = type(value).__name__
            if ctx_name != "Load":
                out["ctx"] = ctx_name
        elif isinstance(value, ast.AST):
            out[name] = _node(value, depth + 1)
        elif isinstance(value, list):
            if value:
                out[name] = [_node(v, depth + 1) if isinstance(v, ast.AST) else _plain(v)
                             for v in value]
        elif name == "value" and cls is ast.Constant:
            _constant(out, value)
        else:
            out[name] = _plain(value)
    return out


def _plain(value):
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return value.encode("utf-8", "replace").decode("utf-8")
    if value is None or isinstance(value, (bool, int)):
        return value
    return repr(value)


def _changed_identifiers(source_bytes):
    """Identifiers that NFKC normalisation changes; only non-ASCII text can have them."""
    if source_bytes.isascii():
        return []
    import io
    import tokenize
    found = []
    try:
        for tok in tokenize.tokenize(io.BytesIO(source_bytes).readline):
            if tok.type == tokenize.NAME and not tok.string.isascii():
                normal = unicodedata.normalize("NFKC", tok.string)
                if normal != tok.string:
                    found.append({"written": tok.string, "normalized": normal,
                                  "line": tok.start[0], "col": tok.start[1]})
    except (tokenize.TokenError, SyntaxError):
        pass
    return found


def parse(source_bytes):
    try:
        tree = ast.parse(source_bytes, "<tool>", "exec")
    except SyntaxError as e:
        return {"ok": False, "error": "syntax_error", "message": str(e.msg),
                "line": e.lineno or 0, "col": e.offset or 0}
    except (ValueError, UnicodeDecodeError, LookupError) as e:
        return {"ok": False, "error": "decode_error", "message": str(e), "line": 0, "col": 0}
    except (RecursionError, MemoryError) as e:
        return {"ok": False, "error": "too_deep", "message": type(e).__name__, "line": 0,
                "col": 0}
    try:
        dumped = _node(tree, 0)
    except (TooDeep, RecursionError):
        return {"ok": False, "error": "too_deep",
                "message": "syntax tree nested deeper than %d" % MAX_DEPTH, "line": 0, "col": 0}
    return {"ok": True, "python": list(sys.version_info[:2]), "tree": dumped,
            "identifiers": _changed_identifiers(source_bytes)}


def _reply(stream, obj):
    try:
        data = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except Exception as e:  # noqa: BLE001 - any failure is reported, never a hang
        data = json.dumps({"ok": False, "error": "internal", "message": repr(e),
                           "line": 0, "col": 0}).encode("utf-8")
    stream.write(b"%d\n" % len(data))
    stream.write(data)
    stream.flush()


def serve():
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        header = stdin.readline()
        if not header:
            return
        size = int(header)
        source = stdin.read(size)
        if len(source) != size:
            return
        try:
            result = parse(source)
        except Exception as e:  # noqa: BLE001
            result = {"ok": False, "error": "internal", "message": repr(e), "line": 0, "col": 0}
        _reply(stdout, result)


def _describe(value):
    import types
    if isinstance(value, types.ModuleType):
        return {"kind": "module", "origin": value.__name__}
    if callable(value):
        origin = getattr(value, "__module__", None)
        name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
        entry = {"kind": "class" if isinstance(value, type) else "callable"}
        if isinstance(origin, str):
            entry["origin"] = origin
        if isinstance(name, str):
            entry["name"] = name
        return entry
    return {"kind": "value"}


def exports(modules):
    import importlib
    loaded, result = {}, {}
    for name in modules:
        try:
            loaded[name] = importlib.import_module(name)
        except BaseException as e:  # noqa: BLE001 - a module that cannot load is reported
            result[name] = {"importable": False, "error": "%s: %s" % (type(e).__name__, e)}
    for name, module in loaded.items():
        attributes = {}
        for attr in dir(module):
            try:
                attributes[attr] = _describe(getattr(module, attr))
            except BaseException:  # noqa: BLE001
                attributes[attr] = {"kind": "value"}
        result[name] = {"importable": True, "attributes": attributes}
    return {"python": list(sys.version_info[:2]), "modules": result}


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "serve"
    if mode == "serve":
        serve()
    elif mode == "dump":
        _reply(sys.stdout.buffer, parse(sys.stdin.buffer.read()))
    elif mode == "exports":
        # Modules may print when imported: keep their output off the reply stream.
        out = sys.stdout.buffer
        sys.stdout = sys.stderr
        _reply(out, exports(sys.argv[2:]))
    else:
        sys.exit("usage: ast_dump.py serve|dump|exports MODULE...")


if __name__ == "__main__":
    main()
