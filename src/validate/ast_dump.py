"""Airlock's parse worker: the target interpreter's own `ast` module, emitting JSON.

Runs inside an Airlock sandbox (no network, small limits). Modes:

  ast_dump.py serve      one request after another on stdin, one reply each on stdout
  ast_dump.py dump       one source on stdin, one reply on stdout (tests, cold benchmark)
  ast_dump.py exports M...   imports the modules M... together and describes each one's
                             attributes (modules, callables and where they come from)

Framing (serve): a request is "<n>\\n" followed by n bytes of source; a reply is "<n>\\n"
followed by n bytes of JSON. Replies:

  {"ok": true, "python": [3, 11], "types": [...], "fields": [[...], ...], "tree": NODE,
   "identifiers": [...]}
  {"ok": false, "error": "syntax_error"|"too_deep"|"decode_error"|"internal",
   "message": "...", "line": L, "col": C}

NODE is an array: [type index, lineno, col_offset, value of field 1, value of field 2, ...]
where types[index] is the node's class name ("Call") and fields[index] its field names in
order (`_fields`); lineno and col_offset are null for nodes without a position. A field value
is a NODE, a list (of NODEs or strings), a string, a number, true/false or null (None). `ctx`
is given as its class name, and null when it is Load. A Constant's value is a string when it
is a str (lone surrogates replaced), otherwise {"vkind": "bytes"|"int"|"float"|"complex"|
"bool"|"None"|"Ellipsis", "value": text} (bytes decoded as latin-1, the rest as repr). Arrays
keep the reply small and quick to build and to read: a 300-line tool is ~90 KB.

"identifiers" lists identifiers whose NFKC normal form differs from how they are written (the
parser normalises them, so the tree alone cannot show the trick).

Binary replies (serve, when the C walk `_airlock_ast` was built for this interpreter and sits
next to this script): "ALTB", a 4-byte little-endian length, the reply object above without
"tree", "types" and "fields", then the tree in the binary form that _airlock_ast.dump() makes
(src/validate/native/ast_walker.c documents it). The walk in C takes 0.25 ms where the Python
walk and JSON take 3.3 ms for a 300-line tool. Failures are always JSON.
"""
import ast
import json
import os
import struct
import sys
import unicodedata

MAX_DEPTH = 400


class TooDeep(Exception):
    pass


_AST = ast.AST
_type_index = {}  # class -> (index into _types/_fields, _fields, is Constant); only grows
_types = []
_fields = []


def _constant(value):
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, bytes):
        return {"vkind": "bytes", "value": value.decode("latin-1")}
    if value is None:
        return {"vkind": "None", "value": "None"}
    if value is Ellipsis:
        return {"vkind": "Ellipsis", "value": "..."}
    return {"vkind": type(value).__name__, "value": repr(value)}


def _node(node, depth):
    """One node and everything below it, as the compact array form (see the module doc)."""
    if depth > MAX_DEPTH:
        raise TooDeep()
    cls = node.__class__
    entry = _type_index.get(cls)
    if entry is None:
        entry = _type_index[cls] = (len(_types), cls._fields, cls is ast.Constant)
        _types.append(cls.__name__)
        _fields.append(list(cls._fields))
    index, fields, is_constant = entry
    attributes = node.__dict__
    lineno = attributes.get("lineno")
    out = [index, lineno, attributes.get("col_offset") if lineno is not None else None]
    depth += 1
    for name in fields:
        value = attributes.get(name)
        if value.__class__ is list:
            out.append([_node(v, depth) if isinstance(v, _AST) else v for v in value])
        elif isinstance(value, _AST):
            if name == "ctx":
                ctx_name = value.__class__.__name__
                out.append(None if ctx_name == "Load" else ctx_name)
            else:
                out.append(_node(value, depth))
        elif is_constant and name == "value":
            out.append(_constant(value))
        else:
            # identifiers, ints (conversion, level, simple), True/False/None: JSON as they are
            out.append(value)
    return out


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


def _native_walk():
    """The C walk, if it was built for this interpreter (its ABI tag is in the file name, so
    the import fails for any other) and bound next to this script; else None."""
    if os.environ.get("AIRLOCK_VALIDATE_PYTHON_WALK"):
        return None
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    try:
        import _airlock_ast
        return _airlock_ast.dump
    except ImportError:
        return None
    finally:
        sys.path.remove(here)


def parse(source_bytes, native_dump=None):
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
        dumped = native_dump(tree, MAX_DEPTH) if native_dump else _node(tree, 0)
    except (TooDeep, RecursionError):
        return {"ok": False, "error": "too_deep",
                "message": "syntax tree nested deeper than %d" % MAX_DEPTH, "line": 0, "col": 0}
    reply = {"ok": True, "python": list(sys.version_info[:2]),
             "identifiers": _changed_identifiers(source_bytes)}
    if native_dump:
        return reply, dumped
    reply.update({"types": _types, "fields": _fields, "tree": dumped})
    return reply


def _reply(stream, result):
    try:
        if isinstance(result, tuple):  # (reply object, binary tree)
            head = json.dumps(result[0], ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            data = b"ALTB" + struct.pack("<I", len(head)) + head + result[1]
        else:
            data = json.dumps(result, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except Exception as e:  # noqa: BLE001 - any failure is reported, never a hang
        data = json.dumps({"ok": False, "error": "internal", "message": repr(e),
                           "line": 0, "col": 0}).encode("utf-8")
    stream.write(b"%d\n" % len(data))
    stream.write(data)
    stream.flush()


def serve():
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    native_dump = _native_walk()
    # Syntax trees hold no reference cycles, so reference counting frees each one; the cyclic
    # collector only added 1.5 ms to every 300-line parse (it scans as ast.parse allocates).
    # It still runs every 64 requests, for any cycle an error path may leave.
    import gc
    gc.disable()
    served = 0
    while True:
        served += 1
        if served % 64 == 0:
            gc.collect()
        header = stdin.readline()
        if not header:
            return
        size = int(header)
        source = stdin.read(size)
        if len(source) != size:
            return
        try:
            result = parse(source, native_dump)
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
