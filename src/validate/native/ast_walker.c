/* _airlock_ast: the parse worker's tree walk in C.
 *
 * ast_dump.py walks the interpreter's `ast` objects into the compact tree the rule engine
 * reads. Done in Python, the walk and the JSON cost twice what ast.parse itself costs, so
 * where this module was built for the running interpreter (its file name carries the ABI tag,
 * so no other interpreter can load it), the worker calls dump() instead and sends the binary
 * form below. It reads the same attributes the Python walk reads and encodes the same values;
 * tests/validate checks that both give the same tree for every corpus program.
 *
 * dump(tree, max_depth) -> bytes:
 *
 *   "ALT1"
 *   varint T                              the node classes seen by this process so far
 *   T x { string name, varint F, F x string field }     (name, then `_fields` in order)
 *   value                                 the tree
 *
 *   value := 0x00                         None
 *          | 0x01 varint type varint line varint col value x F(type)
 *                                         a node; line is lineno + 1 and col col_offset + 1,
 *                                         both 0 when the node has no position
 *          | 0x02 varint n value x n      a list
 *          | 0x03 string                  a str (lone surrogates replaced by '?'); a ctx field
 *                                         holds its class name, None for Load
 *          | 0x04 varint(zigzag)          an int that fits in 64 bits (conversion, level, ...)
 *          | 0x05 | 0x06                  True | False
 *          | 0x07 string kind string text a Constant's value that is not a str: kind is
 *                                         bytes|int|float|complex|bool|None|Ellipsis, text is
 *                                         the bytes as latin-1 or the repr()
 *   string := varint length, UTF-8 bytes
 *   varint := unsigned LEB128
 *
 * Raises RecursionError when nodes nest deeper than max_depth, TypeError for a value of a
 * kind the format has no place for (the worker turns both into failed parses).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef struct {
  char* data;
  Py_ssize_t size;
  Py_ssize_t capacity;
} Buffer;

static int buffer_reserve(Buffer* b, Py_ssize_t more) {
  if (b->size + more <= b->capacity) return 0;
  Py_ssize_t capacity = b->capacity ? b->capacity : 4096;
  while (capacity < b->size + more) capacity *= 2;
  char* data = PyMem_Realloc(b->data, (size_t)capacity);
  if (!data) {
    PyErr_NoMemory();
    return -1;
  }
  b->data = data;
  b->capacity = capacity;
  return 0;
}

static int put_byte(Buffer* b, unsigned char byte) {
  if (buffer_reserve(b, 1) < 0) return -1;
  b->data[b->size++] = (char)byte;
  return 0;
}

static int put_varint(Buffer* b, uint64_t value) {
  if (buffer_reserve(b, 10) < 0) return -1;
  do {
    unsigned char byte = value & 0x7f;
    value >>= 7;
    b->data[b->size++] = (char)(value ? byte | 0x80 : byte);
  } while (value);
  return 0;
}

static int put_bytes(Buffer* b, const char* data, Py_ssize_t size) {
  if (put_varint(b, (uint64_t)size) < 0 || buffer_reserve(b, size) < 0) return -1;
  memcpy(b->data + b->size, data, (size_t)size);
  b->size += size;
  return 0;
}

/* A str as UTF-8; lone surrogates become '?' as with str.encode("utf-8", "replace"). */
static int put_str(Buffer* b, PyObject* text) {
  Py_ssize_t size = 0;
  const char* utf8 = PyUnicode_AsUTF8AndSize(text, &size);
  if (utf8) return put_bytes(b, utf8, size);
  if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) return -1;
  PyErr_Clear();
  PyObject* encoded = PyUnicode_AsEncodedString(text, "utf-8", "replace");
  if (!encoded) return -1;
  int rc = put_bytes(b, PyBytes_AS_STRING(encoded), PyBytes_GET_SIZE(encoded));
  Py_DECREF(encoded);
  return rc;
}

/* bytes decoded as latin-1, written as UTF-8. */
static int put_latin1(Buffer* b, PyObject* bytes) {
  const unsigned char* data = (const unsigned char*)PyBytes_AS_STRING(bytes);
  Py_ssize_t size = PyBytes_GET_SIZE(bytes), encoded = size;
  for (Py_ssize_t i = 0; i < size; ++i) encoded += data[i] >= 0x80;
  if (put_varint(b, (uint64_t)encoded) < 0 || buffer_reserve(b, encoded) < 0) return -1;
  for (Py_ssize_t i = 0; i < size; ++i) {
    if (data[i] < 0x80) {
      b->data[b->size++] = (char)data[i];
    } else {
      b->data[b->size++] = (char)(0xc0 | (data[i] >> 6));
      b->data[b->size++] = (char)(0x80 | (data[i] & 0x3f));
    }
  }
  return 0;
}

static int put_ascii(Buffer* b, const char* text) {
  return put_bytes(b, text, (Py_ssize_t)strlen(text));
}

/* What the module keeps between calls: the node classes seen so far, in order of discovery. */
static PyObject* g_type_index;  /* dict: class -> int index */
static PyObject* g_types;       /* list of (class, _fields tuple, is Constant) */
static PyObject* g_ast_class;   /* ast.AST */
static PyObject* g_constant_class;
static PyObject* g_load_class;
static PyObject* g_str_lineno;
static PyObject* g_str_col_offset;
static PyObject* g_str_value;
static PyObject* g_str_ctx;

/* The entry for `cls`, registered on first sight. Borrowed reference. */
static PyObject* type_entry(PyObject* cls, Py_ssize_t* index) {
  PyObject* known = PyDict_GetItemWithError(g_type_index, cls);
  if (known) {
    *index = PyLong_AsSsize_t(known);
    return PyList_GET_ITEM(g_types, *index);
  }
  if (PyErr_Occurred()) return NULL;
  PyObject* declared = PyObject_GetAttrString(cls, "_fields");
  if (!declared) return NULL;
  if (!PyTuple_Check(declared)) {
    Py_DECREF(declared);
    PyErr_SetString(PyExc_TypeError, "a node class's _fields is not a tuple");
    return NULL;
  }
  /* Our own tuple of interned names: field lookups in a node's __dict__ by an interned key
     are quickest, and put_node() compares names by identity. */
  PyObject* fields = PyTuple_New(PyTuple_GET_SIZE(declared));
  for (Py_ssize_t i = 0; fields && i < PyTuple_GET_SIZE(declared); ++i) {
    PyObject* name = PyTuple_GET_ITEM(declared, i);
    if (!PyUnicode_CheckExact(name)) {
      Py_CLEAR(fields);
      PyErr_SetString(PyExc_TypeError, "a node class's field name is not a str");
      break;
    }
    Py_INCREF(name);
    PyUnicode_InternInPlace(&name);
    PyTuple_SET_ITEM(fields, i, name);
  }
  Py_DECREF(declared);
  if (!fields) return NULL;
  PyObject* entry = Py_BuildValue("(ONO)", cls, fields, cls == g_constant_class ? Py_True : Py_False);
  if (!entry) return NULL;
  *index = PyList_GET_SIZE(g_types);
  PyObject* number = PyLong_FromSsize_t(*index);
  int failed = !number || PyList_Append(g_types, entry) < 0 ||
               PyDict_SetItem(g_type_index, cls, number) < 0;
  Py_XDECREF(number);
  Py_DECREF(entry);
  return failed ? NULL : PyList_GET_ITEM(g_types, *index);
}

static int put_value(Buffer* b, PyObject* value, int depth, int max_depth);

static int put_position(Buffer* b, PyObject* attributes) {
  PyObject* lineno = PyDict_GetItemWithError(attributes, g_str_lineno);
  if (!lineno && PyErr_Occurred()) return -1;
  if (!lineno || !PyLong_Check(lineno)) return put_varint(b, 0) < 0 ? -1 : put_varint(b, 0);
  PyObject* col = PyDict_GetItemWithError(attributes, g_str_col_offset);
  if (!col && PyErr_Occurred()) return -1;
  long line = PyLong_AsLong(lineno);
  long column = col && PyLong_Check(col) ? PyLong_AsLong(col) : -1;
  if (PyErr_Occurred()) return -1;
  if (put_varint(b, line >= 0 ? (uint64_t)line + 1 : 0) < 0) return -1;
  return put_varint(b, column >= 0 ? (uint64_t)column + 1 : 0);
}

static int put_constant(Buffer* b, PyObject* value) {
  if (PyUnicode_Check(value)) {
    if (put_byte(b, 0x03) < 0) return -1;
    return put_str(b, value);
  }
  if (put_byte(b, 0x07) < 0) return -1;
  if (PyBytes_Check(value)) {
    if (put_ascii(b, "bytes") < 0) return -1;
    return put_latin1(b, value);
  }
  if (value == Py_None) return put_ascii(b, "None") < 0 ? -1 : put_ascii(b, "None");
  if (value == Py_Ellipsis) return put_ascii(b, "Ellipsis") < 0 ? -1 : put_ascii(b, "...");
  if (put_ascii(b, Py_TYPE(value)->tp_name) < 0) return -1;
  PyObject* repr = PyObject_Repr(value);
  if (!repr) return -1;
  int rc = put_str(b, repr);
  Py_DECREF(repr);
  return rc;
}

static int put_node(Buffer* b, PyObject* node, int depth, int max_depth) {
  if (depth > max_depth) {
    PyErr_SetString(PyExc_RecursionError, "syntax tree nested too deeply");
    return -1;
  }
  Py_ssize_t index = 0;
  PyObject* entry = type_entry((PyObject*)Py_TYPE(node), &index);
  if (!entry) return -1;
  PyObject* fields = PyTuple_GET_ITEM(entry, 1);
  int is_constant = PyTuple_GET_ITEM(entry, 2) == Py_True;
  PyObject* attributes = PyObject_GenericGetDict(node, NULL);
  if (!attributes) return -1;
  int rc = -1;
  if (put_byte(b, 0x01) < 0 || put_varint(b, (uint64_t)index) < 0 ||
      put_position(b, attributes) < 0)
    goto done;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fields); ++i) {
    PyObject* name = PyTuple_GET_ITEM(fields, i);
    PyObject* value = PyDict_GetItemWithError(attributes, name);
    if (!value) {
      if (PyErr_Occurred()) goto done;
      value = Py_None;  /* a field the node does not have reads as None, as dict.get does */
    }
    int field_rc;
    if (name == g_str_ctx && PyObject_TypeCheck(value, (PyTypeObject*)g_ast_class)) {
      /* Load is left out (None): nearly every Name has it. */
      if ((PyObject*)Py_TYPE(value) == g_load_class) {
        field_rc = put_byte(b, 0x00);
      } else {
        field_rc = put_byte(b, 0x03);
        if (field_rc == 0) field_rc = put_ascii(b, _PyType_Name(Py_TYPE(value)));
      }
    } else if (is_constant && name == g_str_value) {
      field_rc = put_constant(b, value);
    } else {
      field_rc = put_value(b, value, depth + 1, max_depth);
    }
    if (field_rc < 0) goto done;
  }
  rc = 0;
done:
  Py_DECREF(attributes);
  return rc;
}

static int put_value(Buffer* b, PyObject* value, int depth, int max_depth) {
  if (value == Py_None) return put_byte(b, 0x00);
  if (value == Py_True) return put_byte(b, 0x05);
  if (value == Py_False) return put_byte(b, 0x06);
  if (PyObject_TypeCheck(value, (PyTypeObject*)g_ast_class)) return put_node(b, value, depth, max_depth);
  if (PyList_CheckExact(value)) {
    Py_ssize_t n = PyList_GET_SIZE(value);
    if (put_byte(b, 0x02) < 0 || put_varint(b, (uint64_t)n) < 0) return -1;
    for (Py_ssize_t i = 0; i < n; ++i)
      if (put_value(b, PyList_GET_ITEM(value, i), depth, max_depth) < 0) return -1;
    return 0;
  }
  if (PyUnicode_Check(value)) return put_byte(b, 0x03) < 0 ? -1 : put_str(b, value);
  if (PyLong_Check(value)) {
    int overflow = 0;
    long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow || (number == -1 && PyErr_Occurred())) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "an integer field beyond 64 bits");
      return -1;
    }
    uint64_t zigzag = ((uint64_t)number << 1) ^ (uint64_t)(number >> 63);
    return put_byte(b, 0x04) < 0 ? -1 : put_varint(b, zigzag);
  }
  PyErr_Format(PyExc_TypeError, "a field value of type %.100s", Py_TYPE(value)->tp_name);
  return -1;
}

static int put_type_table(Buffer* b) {
  Py_ssize_t n = PyList_GET_SIZE(g_types);
  if (put_varint(b, (uint64_t)n) < 0) return -1;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* entry = PyList_GET_ITEM(g_types, i);
    PyObject* fields = PyTuple_GET_ITEM(entry, 1);
    if (put_ascii(b, _PyType_Name((PyTypeObject*)PyTuple_GET_ITEM(entry, 0))) < 0) return -1;
    if (put_varint(b, (uint64_t)PyTuple_GET_SIZE(fields)) < 0) return -1;
    for (Py_ssize_t f = 0; f < PyTuple_GET_SIZE(fields); ++f)
      if (put_str(b, PyTuple_GET_ITEM(fields, f)) < 0) return -1;
  }
  return 0;
}

static PyObject* dump(PyObject* module, PyObject* args) {
  (void)module;
  PyObject* tree;
  int max_depth;
  if (!PyArg_ParseTuple(args, "Oi:dump", &tree, &max_depth)) return NULL;
  Buffer body = {NULL, 0, 0}, head = {NULL, 0, 0};
  PyObject* result = NULL;
  /* The tree first: it registers the classes the table must list. */
  if (put_value(&body, tree, 0, max_depth) == 0 && buffer_reserve(&head, 4) == 0) {
    memcpy(head.data, "ALT1", 4);
    head.size = 4;
    if (put_type_table(&head) == 0) {
      result = PyBytes_FromStringAndSize(NULL, head.size + body.size);
      if (result) {
        memcpy(PyBytes_AS_STRING(result), head.data, (size_t)head.size);
        memcpy(PyBytes_AS_STRING(result) + head.size, body.data, (size_t)body.size);
      }
    }
  }
  PyMem_Free(body.data);
  PyMem_Free(head.data);
  return result;
}

static PyMethodDef kMethods[] = {
    {"dump", dump, METH_VARARGS, "dump(tree, max_depth) -> bytes: the tree in Airlock's binary form"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef kModule = {
    PyModuleDef_HEAD_INIT, "_airlock_ast", "Airlock's parse worker tree walk", -1, kMethods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__airlock_ast(void) {
  PyObject* ast = PyImport_ImportModule("ast");
  if (!ast) return NULL;
  g_ast_class = PyObject_GetAttrString(ast, "AST");
  g_constant_class = PyObject_GetAttrString(ast, "Constant");
  g_load_class = PyObject_GetAttrString(ast, "Load");
  Py_DECREF(ast);
  if (!g_ast_class || !g_constant_class || !g_load_class) return NULL;
  g_type_index = PyDict_New();
  g_types = PyList_New(0);
  g_str_lineno = PyUnicode_InternFromString("lineno");
  g_str_col_offset = PyUnicode_InternFromString("col_offset");
  g_str_value = PyUnicode_InternFromString("value");
  g_str_ctx = PyUnicode_InternFromString("ctx");
  if (!g_type_index || !g_types || !g_str_lineno || !g_str_col_offset || !g_str_value || !g_str_ctx)
    return NULL;
  return PyModule_Create(&kModule);
}
