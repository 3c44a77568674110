// Published escapes of Python "sandboxes", as the payloads look (reconstructed from the
// advisories' descriptions; each runs a command or reaches the interpreter's globals).
#pragma once

namespace airlock::validate::test {

struct Escape {
  const char* name;
  const char* reference;
  const char* source;
};

inline constexpr Escape kPublishedEscapes[] = {
    {"smolagents_getattr_leak", "CVE-2025-5120 (smolagents LocalPythonExecutor)",
     // An allowed function's globals lead back to the real builtins and __import__.
     "import random\n"
     "g = getattr(random.choice, '__globals__')\n"
     "g['__builtins__']['__import__']('os').system('id')\n"},
    {"smolagents_class_hierarchy", "CVE-2025-9959 (smolagents LocalPythonExecutor)",
     "for cls in object.__subclasses__():\n"
     "    if cls.__name__ == 'Popen':\n"
     "        cls(['id'])\n"},
    {"smolagents_reexported_module", "CVE-2026-4963 (smolagents; the class as reported: an "
     "allowed module's attribute reaches a dangerous one)",
     "import random\n"
     "random._os.system('id')\n"},
    {"restrictedpython_generator_frames", "CVE-2023-37271 (RestrictedPython)",
     "def gen():\n"
     "    yield 1\n"
     "g = gen()\n"
     "frame = g.gi_frame.f_back.f_back\n"
     "frame.f_globals['__builtins__']\n"},
    {"restrictedpython_format_string", "CVE-2023-41039 (RestrictedPython)",
     "import string\n"
     "string.Formatter().format('{0.__class__.__base__.__subclasses__}', 1)\n"},
    {"pyjail_builtins_via_function", "classic pyjail",
     "(lambda: 0).__globals__['__builtins__'].__import__('os').system('id')\n"},
    {"pyjail_catch_warnings", "classic pyjail",
     "[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == 'catch_warnings'][0]()"
     "._module.__builtins__['__import__']('os').system('id')\n"},
    {"pyjail_unicode_exec", "classic pyjail (NFKC)",
     "\xef\xbd\x85\xef\xbd\x98\xef\xbd\x85\xef\xbd\x83('import os; os.system(\"id\")')\n"},
    {"pyjail_decorator_exec", "classic pyjail (code without a call)",
     "@exec\n@input\nclass X:\n    pass\n"},
    {"pyjail_traceback_frames", "classic pyjail",
     "try:\n    raise Exception\nexcept Exception as e:\n"
     "    e.__traceback__.tb_frame.f_globals['__builtins__']\n"},
    {"pyjail_getattr_concat", "classic pyjail",
     "getattr(getattr(1, '__cl' + 'ass__'), '__ba' + 'se__')\n"},
    {"pyjail_octal_exec", "classic pyjail",
     "exec('\\137\\137import\\137\\137(\"os\").system(\"id\")')\n"},
    {"pyjail_class_getitem", "classic pyjail (code without a call)",
     "class X:\n    __class_getitem__ = exec\nX['import os']\n"},
    {"pyjail_utf7_cookie", "classic pyjail (coding cookie)",
     "# -*- coding: utf-7 -*-\n+AF8AXw-import+AF8AXw-('os')\n"},
};

}  // namespace airlock::validate::test
