// The rule engine, case by case: every rule rejects its attacks (obfuscated forms and the
// published escapes included) and accepts the look-alikes ordinary code needs. Trees come
// from ast_dump.py run directly by the host's python3 (tests/validate/direct_parser.hpp).
#include <gtest/gtest.h>

#include <sstream>

#include "../validate/direct_parser.hpp"

namespace airlock::validate {
namespace {

struct Case {
  const char* name;
  const char* source;
  const char* rule;            // the rule that must report (reject cases)
  const char* allow = "";      // extra allowed imports, space-separated
  const char* hosts = "";      // allowed hosts, space-separated
};

std::vector<std::string> words(const char* text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

Policy policy_for(const Case& c) {
  Policy policy;
  for (const auto& m : words(c.allow)) policy.allowed_imports.insert(m);
  auto hosts = HostAllowlist::parse(words(c.hosts));
  EXPECT_TRUE(hosts.ok());
  if (hosts) policy.allowed_hosts = *hosts;
  return policy;
}

std::string describe(const Report& report) {
  std::string out;
  for (const auto& f : report.findings)
    out += "  " + std::to_string(f.line) + ":" + std::to_string(f.col) + " [" + f.rule + "] " +
           f.message + "\n";
  return out.empty() ? "  (no findings)\n" : out;
}

bool has_rule(const Report& report, const std::string& rule) {
  for (const auto& f : report.findings)
    if (f.rule == rule && f.severity == Severity::error) return true;
  return false;
}

class Rejects : public ::testing::TestWithParam<Case> {};

TEST_P(Rejects, WithItsRule) {
  const Case& c = GetParam();
  Report report = test::check_directly(c.source, policy_for(c));
  EXPECT_EQ(report.verdict, Verdict::reject) << c.source << "\n" << describe(report);
  EXPECT_TRUE(has_rule(report, c.rule)) << "expected [" << c.rule << "] for:\n"
                                        << c.source << "\n" << describe(report);
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) { return info.param.name; }

// ---- fail closed: the source and the parser ----
const Case kSourceCases[] = {
    {"BidiOverride", "s = 'user\xE2\x80\xAE \xE2\x81\xA6// admin'\n", "source-bidi-control"},
    {"BidiIsolate", "x = 1  # \xE2\x81\xA7\n", "source-bidi-control"},
    {"CodingCookieUtf7", "# -*- coding: utf-7 -*-\nx = '+AGUAeABlAGMAKAAp-'\n", "source-coding-cookie"},
    {"CodingCookieLatin1Line2", "#!/usr/bin/python3\n# vim: set fileencoding=latin-1 :\nx = 1\n",
     "source-coding-cookie"},
    {"NotUtf8", "x = '\xff\xfe'\n", "source-not-utf8"},
    {"NfkcFullwidthEval", "\xEF\xBD\x85\xEF\xBD\x96\xEF\xBD\x81\xEF\xBD\x8C('1')\n", "source-nfkc-identifier"},
    {"NfkcEvalIsStillEval", "\xEF\xBD\x85\xEF\xBD\x96\xEF\xBD\x81\xEF\xBD\x8C('1')\n", "dynamic-code"},
    {"NfkcBuiltins", "x = __\xF0\x9D\x90\x9Builtins__\n", "reflection-dunder"},
    {"SyntaxError", "def f(:\n  pass\n", "syntax-error"},
};

// ---- imports ----
const Case kImportCases[] = {
    {"NotAllowed", "import socket\n", "import-not-allowed"},
    {"NameOnlyNotByWildcard", "import os\n", "import-not-allowed", "*"},
    {"NameOnlySubmoduleNotByWildcard", "import os.path\n", "import-not-allowed", "os.*"},
    {"PrivateModuleNotByWildcard", "import _posixsubprocess\n", "import-not-allowed", "*"},
    {"SubmoduleNeedsItsOwnEntry", "import collections.abc\n", "import-not-allowed"},
    {"FromSubmoduleNeedsItsOwnEntry", "from xml import etree\n", "import-not-allowed", "xml"},
    {"FromNotAllowed", "from socket import socket\n", "import-not-allowed"},
    {"Star", "from math import *\n", "import-star"},
    {"Relative", "from . import sibling\n", "import-relative"},
    {"PackageOnlyReachesAllowedSubmodules",
     "import urllib.request\nurllib.parse.quote('x')\n", "import-not-allowed", "urllib.request"},
    {"Unavailable", "import no_such_module_airlock\n", "import-unavailable", "no_such_module_airlock"},
};

// ---- dynamic code ----
const Case kDynamicCodeCases[] = {
    {"Eval", "eval('1+1')\n", "dynamic-code"},
    {"ExecBase64Payload", "import base64\nexec(base64.b64decode('cHJpbnQoMSk='))\n", "dynamic-code"},
    {"ExecHexPayload", "exec(bytes.fromhex('7072696e74283129').decode())\n", "dynamic-code"},
    {"ExecOctalEscapes", "exec('\\160\\162\\151\\156\\164(1)')\n", "dynamic-code"},
    {"EvalAliased", "e = eval\ne('1')\n", "dynamic-code"},
    {"EvalInList", "[eval][0]('1')\n", "dynamic-code"},
    {"Compile", "c = compile('1', 'x', 'eval')\n", "dynamic-code"},
    {"DunderImport", "__import__('os').system('id')\n", "dynamic-code"},
    {"GlobalsBuiltins", "globals()['__builtins__']\n", "dynamic-code"},
    {"Locals", "locals()\n", "dynamic-code"},
    {"Vars", "vars(object)\n", "dynamic-code"},
    {"Breakpoint", "breakpoint()\n", "dynamic-code"},
    {"Help", "help()\n", "dynamic-code"},
    {"InComprehension", "[eval(s) for s in ['1']]\n", "dynamic-code"},
    {"InLambdaDefault", "f = lambda x=exec: x('1')\n", "dynamic-code"},
    {"InFunctionDefault", "def f(x=eval('1')):\n    pass\n", "dynamic-code"},
    {"InFstring", "x = f\"{eval('1')}\"\n", "dynamic-code"},
    {"InFstringFormatSpec", "x = f\"{1:{eval('5')}}\"\n", "dynamic-code"},
    {"InMatchGuard", "match 1:\n    case 1 if eval('1'):\n        pass\n", "dynamic-code"},
    {"InMatchValue", "import os\nmatch 1:\n    case os.system:\n        pass\n", "process-exec", "os"},
    {"InExceptHandler", "try:\n    pass\nexcept Exception:\n    exec('x')\n", "dynamic-code"},
    {"InTryStar", "try:\n    pass\nexcept* ValueError:\n    exec('x')\n", "dynamic-code"},
    {"InFinally", "try:\n    pass\nfinally:\n    exec('x')\n", "dynamic-code"},
    {"WalrusChain", "(e := eval)('1')\n", "dynamic-code"},
    {"WalrusChainTwice", "if (a := (b := exec)):\n    a('1')\n", "dynamic-code"},
    {"DecoratorWithoutCall", "@exec\n@lambda _: 'print(1)'\nclass A:\n    pass\n", "dynamic-code"},
    {"NestedBlocks",
     "class A:\n    def m(self):\n        with open('x') as f:\n            for i in range(3):\n"
     "                while True:\n                    if i:\n                        try:\n"
     "                            g = (lambda: [exec(s) for s in f])\n"
     "                        except Exception:\n                            pass\n"
     "                    break\n",
     "dynamic-code"},
    {"SysModules", "import sys\nsys.modules['os'].system('id')\n", "dynamic-code", "sys"},
    {"SysModulesViaReexport", "import typing\ntyping.sys.modules['os']\n", "dynamic-code", "sys"},
    {"Importlib", "import importlib\nimportlib.import_module('os')\n", "dynamic-code", "importlib"},
    {"FromImportlib", "from importlib import import_module\n", "dynamic-code", "importlib"},
    {"Timeit", "import timeit\ntimeit.timeit('1')\n", "dynamic-code", "timeit"},
    {"CProfileRun", "import cProfile\ncProfile.run('1')\n", "dynamic-code", "cProfile"},
    {"CodeInteract", "import code\ncode.interact()\n", "dynamic-code", "code"},
    {"Pdb", "import pdb\npdb.run('1')\n", "dynamic-code", "pdb"},
    {"LoggingConfigListen", "import logging.config\nlogging.config.listen(9999)\n", "dynamic-code",
     "logging logging.config"},
    {"PandasQuery", "import pandas as pd\ndf = pd.DataFrame()\ndf.query('a > 1')\n", "dynamic-code",
     "pandas"},
    {"PandasEval", "import pandas\npandas.eval('1+1')\n", "dynamic-code", "pandas"},
    {"BuiltinsReexportedByEnum", "import enum\nenum.bltns.exec('1')\n", "dynamic-code", "builtins"},
};

// ---- process execution ----
const Case kProcessCases[] = {
    {"ImportSubprocess", "import subprocess\n", "process-exec"},
    {"SubprocessAllowedByNameStillRejected", "import subprocess\nsubprocess.run(['id'])\n",
     "process-exec", "subprocess"},
    {"FromSubprocessAlias", "from subprocess import run as r\nr(['id'])\n", "process-exec"},
    {"ImportOsAs", "import os as o\no.system('id')\n", "process-exec", "os"},
    {"AliasedOsSystem", "import os\ns = os.system\ns('id')\n", "process-exec", "os"},
    {"FromOsImportSystem", "from os import system\n", "process-exec", "os"},
    {"OsExecv", "import os\nos.execv('/bin/sh', ['sh'])\n", "process-exec", "os"},
    {"OsSpawn", "import os\nos.spawnlp(os.P_WAIT, 'id', 'id')\n", "process-exec", "os"},
    {"OsPosixSpawn", "import os\nos.posix_spawnp('id', ['id'], {})\n", "process-exec", "os"},
    {"OsFork", "import os\nos.fork()\n", "process-exec", "os"},
    {"OsPopen", "import os\nos.popen('id').read()\n", "process-exec", "os"},
    {"OsKill", "import os\nos.kill(1, 9)\n", "process-exec", "os"},
    {"PtySpawn", "import pty\npty.spawn('/bin/sh')\n", "process-exec", "pty"},
    {"Multiprocessing", "import multiprocessing\n", "process-exec"},
    {"AsyncioSubprocess", "import asyncio\nasyncio.create_subprocess_shell('id')\n", "process-exec",
     "asyncio"},
    {"LoopSubprocessExec", "async def f(loop):\n    await loop.subprocess_exec(None, 'id')\n",
     "process-exec"},
    {"PlatformOsSystem", "import platform\nplatform.os.system('id')\n", "process-exec", "platform"},
    {"UuidOsSystem", "import uuid\nuuid.os.system('id')\n", "process-exec"},
    {"GetattrLiteralOnAllowedOs", "import os\ngetattr(os, 'system')('id')\n", "reflection-module-value",
     "os"},
};

// ---- reflection ----
const Case kReflectionCases[] = {
    // CVE-2025-9959 (smolagents): a class-hierarchy walk to subprocess.Popen.
    {"SubclassWalkToPopen",
     "for c in ().__class__.__bases__[0].__subclasses__():\n"
     "    if c.__name__ == 'Popen':\n        c(['id'])\n",
     "reflection-dunder"},
    {"MroWalk", "x = 1\nx.__class__.__mro__[-1].__subclasses__()\n", "reflection-dunder"},
    {"TypeMroMethod", "int.mro()[-1]\n", "reflection-frame"},
    {"GlobalsOfAFunction", "def f():\n    pass\nf.__globals__['__builtins__']\n", "reflection-dunder"},
    {"BuiltinsName", "__builtins__['eval']('1')\n", "reflection-dunder"},
    {"PrintSelf", "print.__self__.eval('1')\n", "reflection-dunder"},
    {"DunderWrite", "class A:\n    pass\na = A()\na.__class__ = int\n", "reflection-dunder"},
    {"DunderAugmentedAssignment", "class A:\n    pass\nA.__dict__ |= {}\n", "reflection-dunder"},
    {"DunderDictItemWrite", "o = object()\no.__dict__['x'] = 1\n", "reflection-dunder"},
    {"DunderDelete", "class A:\n    x = 1\ndel A.__doc__\n", "reflection-dunder"},
    {"DunderNameStore", "__name__ = 'x'\n", "reflection-dunder"},
    {"DunderClassAttribute", "class A:\n    __slots__ = ()\n", "reflection-dunder"},
    {"GlobalDunder", "def f():\n    global __builtins__\n", "reflection-dunder"},
    {"ModuleGetattr", "def __getattr__(name):\n    return name\n", "reflection-dunder"},
    {"MatchClassDunderAttribute", "match 1:\n    case int(__class__=c):\n        pass\n",
     "reflection-dunder"},
    {"FromImportDunder", "from json import __loader__\n", "reflection-dunder"},
    {"PrivateOfModule", "import random\nrandom._os\n", "reflection-private"},
    {"FromImportPrivate", "from random import _os\n", "reflection-private"},
    {"PrivateOfOtherObject", "class A:\n    def m(self, other):\n        return other._cache\n",
     "reflection-private"},
    {"SelfOutsideAMethod", "def f(self):\n    return self._x\n", "reflection-private"},
    {"SelfRebound", "class A:\n    def m(self):\n        def g(self):\n            return self._x\n",
     "reflection-private"},
    // CVE-2023-37271 (RestrictedPython): stack frames through a generator.
    {"GeneratorFrameWalk", "g = (x for x in [1])\ng.gi_frame.f_back.f_globals\n", "reflection-frame"},
    {"TracebackFrameWalk",
     "try:\n    1 / 0\nexcept Exception as e:\n    e.__traceback__.tb_frame.f_back.f_globals\n",
     "reflection-dunder"},
    {"ExcInfoFrame", "import sys\nsys.exc_info()[2].tb_frame\n", "reflection-frame", "sys"},
    {"SysGetframe", "import sys\nsys._getframe(1).f_globals\n", "reflection-frame", "sys"},
    {"CoroutineFrame", "async def f():\n    pass\nc = f()\nc.cr_frame\n", "reflection-frame"},
    {"CodeObject", "def f():\n    pass\nf.__code__.co_code\n", "reflection-dunder"},
    {"GetattrLiteralFrame", "g = (x for x in [1])\ngetattr(g, 'gi_frame')\n", "reflection-frame"},
    {"InspectCurrentframe", "import inspect\ninspect.currentframe()\n", "reflection-frame", "inspect"},
    {"GcGetObjects", "import gc\ngc.get_objects()\n", "reflection-frame", "gc"},
    // Getattr with computed names (string concatenation, join) and _ names.
    {"GetattrConcatenation", "getattr(1, '__cl' + 'ass__')\n", "reflection-getattr"},
    {"GetattrJoin", "getattr(1, ''.join(['__', 'class', '__']))\n", "reflection-getattr"},
    {"GetattrChr", "getattr(1, chr(95) * 2 + 'class' + chr(95) * 2)\n", "reflection-getattr"},
    {"GetattrVariable", "name = input()\ngetattr(1, name)\n", "reflection-getattr"},
    {"GetattrUnderscore", "getattr(1, '_private')\n", "reflection-getattr"},
    {"SetattrDunder", "class A:\n    pass\nsetattr(A, '__class__', int)\n", "reflection-getattr"},
    {"DelattrComputed", "class A:\n    x = 1\ndelattr(A, 'x'[::-1])\n", "reflection-getattr"},
    {"HasattrDunder", "hasattr(1, '__globals__')\n", "reflection-getattr"},
    {"GetattrStarArgs", "args = (1, '__class__')\ngetattr(*args)\n", "reflection-getattr"},
    {"Attrgetter", "import operator\noperator.attrgetter('__class__')(1)\n", "reflection-getattr"},
    {"AttrgetterDotted", "import operator\noperator.attrgetter('real.__class__')(1)\n",
     "reflection-getattr"},
    {"Methodcaller", "import operator\nn = input()\noperator.methodcaller(n)(1)\n", "reflection-getattr"},
    // Higher-order getattr.
    {"GetattrInMap", "list(map(getattr, [1], ['__class__']))\n", "reflection-getattr-value"},
    {"GetattrInPartial", "import functools\nfunctools.partial(getattr, 1)\n", "reflection-getattr-value"},
    {"GetattrAsSortKey", "sorted([1], key=getattr)\n", "reflection-getattr-value"},
    {"GetattrInReduce", "import functools\nfunctools.reduce(getattr, ['__class__'], 1)\n",
     "reflection-getattr-value"},
    {"GetattrAliased", "g = getattr\ng(1, 'real')\n", "reflection-getattr-value"},
    {"SetattrAsValue", "f = [setattr][0]\n", "reflection-getattr-value"},
    {"AttrgetterAsValue", "import operator\nlist(map(operator.attrgetter, ['x']))\n",
     "reflection-getattr-value"},
    // Modules as values and module writes.
    {"ModuleAliasedByAssignment", "import random\nr = random\nr._os\n", "reflection-module-value"},
    {"ModuleInContainer", "import random\nx = [random][0]\nx.seed(1)\n", "reflection-module-value"},
    {"ModuleAsArgument", "import json\nprint(json)\n", "reflection-module-value"},
    {"ModuleThroughWalrus", "import random\n(m := random)\n", "reflection-module-value"},
    {"SubmoduleAsValue", "import os\np = os.path\n", "reflection-module-value", "os"},
    {"ModuleWrite", "import json\njson.dumps = print\n", "reflection-module-write"},
    {"ModuleDelete", "import json\ndel json.loads\n", "reflection-module-write"},
    {"ModuleWriteThroughAlias", "import random as r\nr.random = lambda: 4\n", "reflection-module-write"},
};

// ---- format strings ----
const Case kFormatCases[] = {
    // CVE-2023-41039 (RestrictedPython): attribute access through str.format.
    {"FormatFieldAttribute", "print('{0.__class__.__init__.__globals__}'.format(1))\n",
     "reflection-format"},
    {"FormatFieldItem", "'{x[__builtins__]}'.format_map({'x': {}})\n", "reflection-format"},
    {"FormatFieldPlainAttribute", "'{0.real}'.format(1)\n", "reflection-format"},
    {"FormatterFormat", "import string\nstring.Formatter().format('{0.__class__}', 1)\n",
     "reflection-format"},
    {"FormatterVformat", "import string\nstring.Formatter().vformat('{0.x}', (1,), {})\n",
     "reflection-format"},
    {"StrFormatUnbound", "str.format('{0.__doc__}', 1)\n", "reflection-format"},
    {"NestedFieldInSpec", "'{:{0.__class__}}'.format(1)\n", "reflection-format"},
    {"TemplateFromVariable", "t = input()\nt.format(1)\n", "reflection-format"},
    {"TemplateFromConstant", "T = '{0.__class__}'\nT.format(1)\n", "reflection-format"},
    {"FormatterGetField", "import string\nstring.Formatter().get_field('0.__class__', (1,), {})\n",
     "reflection-format"},
    {"TemplateConcatenated", "('{0.' + '__class__}').format(1)\n", "reflection-format"},
};

// ---- deserialisation and native code ----
const Case kSerializationCases[] = {
    {"PickleLoads", "import pickle\npickle.loads(b'')\n", "deserialization", "pickle"},
    {"PickleImport", "import pickle\n", "deserialization"},
    {"FromPickleImportLoads", "from pickle import loads as l\nl(b'')\n", "deserialization", "pickle"},
    {"Marshal", "import marshal\nmarshal.loads(b'')\n", "deserialization", "marshal"},
    {"Shelve", "import shelve\nshelve.open('x')\n", "deserialization", "shelve"},
    {"Dill", "import dill\n", "deserialization"},
    {"Jsonpickle", "import jsonpickle\n", "deserialization"},
    {"CPickle", "import cPickle\n", "deserialization"},
    {"YamlLoadDefault", "import yaml\nyaml.load('a: 1')\n", "deserialization", "yaml"},
    {"YamlLoadUnsafeLoader", "import yaml\nyaml.load('a: 1', Loader=yaml.Loader)\n", "deserialization",
     "yaml"},
    {"YamlUnsafeLoad", "import yaml\nyaml.unsafe_load('a: 1')\n", "deserialization", "yaml"},
    {"TorchLoad", "import torch\ntorch.load('model.pt')\n", "deserialization", "torch"},
    {"Ctypes", "import ctypes\nctypes.CDLL(None).system(b'id')\n", "native-code", "ctypes"},
    {"CtypesImport", "import ctypes\n", "native-code"},
    {"Cffi", "import cffi\n", "native-code"},
    {"Mmap", "import mmap\n", "native-code"},
};

// ---- files ----
const Case kFileCases[] = {
    {"WriteEtc", "open('/etc/passwd', 'w')\n", "file-write-outside-roots"},
    {"AppendRelativeEscape", "open('../etc/x', 'a')\n", "file-write-outside-roots"},
    {"WriteDotDotInsideRoot", "open('/work/../etc/x', 'w')\n", "file-write-outside-roots"},
    {"ReadPlusWrites", "open('/etc/hosts', mode='r+')\n", "file-write-outside-roots"},
    {"ExclusiveCreate", "open('/usr/x', 'xb')\n", "file-write-outside-roots"},
    {"ConstantPath", "TARGET = '/etc/cron.d/x'\nopen(TARGET, 'w')\n", "file-write-outside-roots"},
    {"PathlibWriteText", "import pathlib\npathlib.Path('/etc/x').write_text('x')\n",
     "file-write-outside-roots", "pathlib"},
    {"PathlibDivision", "from pathlib import Path\n(Path('/etc') / 'cron.d' / 'x').write_text('')\n",
     "file-write-outside-roots", "pathlib"},
    {"ShutilCopyDestination", "import shutil\nshutil.copy('a', '/usr/bin/x')\n",
     "file-write-outside-roots", "shutil"},
    {"ShutilRmtree", "import shutil\nshutil.rmtree('/')\n", "file-write-outside-roots", "shutil"},
    {"OsRemove", "import os\nos.remove('/etc/passwd')\n", "file-write-outside-roots", "os"},
    {"OsSymlink", "import os\nos.symlink('/etc/passwd', '/work/p')\n", "file-write-outside-roots", "os"},
    {"OsChdir", "import os\nos.chdir('/etc')\n", "file-write-outside-roots", "os"},
    {"OsPathJoin", "import os\nopen(os.path.join('/etc', 'x'), 'w')\n", "file-write-outside-roots",
     "os"},
    {"TarWithoutFilter", "import tarfile\ntarfile.open('a.tar').extractall()\n",
     "file-write-outside-roots", "tarfile"},
    {"ZipExtractOutside", "import zipfile\nzipfile.ZipFile('a.zip').extractall('/etc')\n",
     "file-write-outside-roots", "zipfile"},
    {"WriteComputedPath", "name = input()\nopen(name, 'w')\n", "file-write-dynamic-path"},
    {"WriteFstringPath", "name = input()\nopen(f'/work/{name}', 'w')\n", "file-write-dynamic-path"},
    {"WriteComputedMode", "p = input()\nm = input()\nopen(p, m)\n", "file-write-dynamic-path"},
    {"WriteUnpacked", "args = ('/etc/x', 'w')\nopen(*args)\n", "file-write-dynamic-path"},
    {"OsRemoveComputed", "import os\nos.remove(input())\n", "file-write-dynamic-path", "os"},
    {"WriteTextOnVariable", "def f(p):\n    p.write_text('x')\n", "file-write-dynamic-path"},
    {"ReadShadow", "open('/etc/shadow')\n", "file-read-outside-roots"},
    {"ReadBinary", "open('/etc/passwd', 'rb').read()\n", "file-read-outside-roots"},
    {"ReadSshKey", "from pathlib import Path\nPath('/root/.ssh/id_rsa').read_text()\n",
     "file-read-outside-roots", "pathlib"},
    {"ListRoot", "import os\nos.listdir('/')\n", "file-read-outside-roots", "os"},
};

// ---- network ----
const Case kNetworkCases[] = {
    {"HostNotAllowed", "import urllib.request\nurllib.request.urlopen('https://evil.example.net/')\n",
     "network-host-not-allowed", "urllib.request", "api.example.com"},
    {"SubdomainEntryIsNotTheApex", "import urllib.request\nurllib.request.urlopen('https://example.com/')\n",
     "network-host-not-allowed", "urllib.request", "*.example.com"},
    {"FromImportUrlopen", "from urllib.request import urlopen\nx = 1\nurlopen(f'https://evil.net/{x}')\n",
     "network-host-not-allowed", "urllib.request", "api.example.com"},
    {"RequestObject", "import urllib.request\nurllib.request.Request('http://169.254.169.254/latest/')\n",
     "network-host-not-allowed", "urllib.request", "api.example.com"},
    {"NumericAddress", "import urllib.request\nurllib.request.urlopen('http://2130706433/')\n",
     "network-host-not-allowed", "urllib.request", "10.0.0.0/8"},
    {"HttpClient", "import http.client\nhttp.client.HTTPSConnection('evil.net')\n",
     "network-host-not-allowed", "http.client", "api.example.com"},
    {"SocketCreateConnection", "import socket\nsocket.create_connection(('10.0.0.1', 80))\n",
     "network-host-not-allowed", "socket", "api.example.com"},
    {"Requests", "import requests\nrequests.get('http://metadata.google.internal/')\n",
     "network-host-not-allowed", "requests", "api.example.com"},
    {"SessionMethod", "def f(session):\n    session.get('https://evil.net/x')\n",
     "network-host-not-allowed", "", "api.example.com"},
    {"Smtp", "import smtplib\nsmtplib.SMTP('mail.evil.net')\n", "network-host-not-allowed", "smtplib",
     "api.example.com"},
    {"FileScheme", "import urllib.request\nurllib.request.urlopen('file:///etc/passwd')\n",
     "network-url-invalid", "urllib.request", "api.example.com"},
    {"Credentials", "import urllib.request\nurllib.request.urlopen('https://api.example.com@evil.net/')\n",
     "network-url-invalid", "urllib.request", "api.example.com"},
    {"Backslash", "import urllib.request\nurllib.request.urlopen('https://evil.net\\\\@api.example.com/')\n",
     "network-url-invalid", "urllib.request", "api.example.com"},
    {"DynamicWithoutHosts", "import urllib.request\nurllib.request.urlopen(input())\n",
     "network-dynamic-destination", "urllib.request"},
    {"DynamicHostInFstring", "import urllib.request\nh = input()\nurllib.request.urlopen(f'https://{h}/x')\n",
     "network-dynamic-destination", "urllib.request"},
    // Ports, where the code names one, as egress matches them.
    {"SocketConnectOtherPort",
     "import socket\ns = socket.socket()\ns.connect(('api.example.com', 8443))\n",
     "network-host-not-allowed", "socket", "api.example.com:443"},
    {"UrlOtherPort", "import urllib.request\nurllib.request.urlopen('https://api.example.com:8443/')\n",
     "network-host-not-allowed", "urllib.request", "api.example.com:443"},
    {"UrlSchemePort", "import urllib.request\nurllib.request.urlopen('http://api.example.com/')\n",
     "network-host-not-allowed", "urllib.request", "api.example.com:443"},
    {"HttpClientPortArgument", "import http.client\nhttp.client.HTTPSConnection('api.example.com', 8443)\n",
     "network-host-not-allowed", "http.client", "api.example.com:443"},
    // Not a host name (egress refuses it too), so no rule matches it.
    {"UnderscoreHost", "import urllib.request\nurllib.request.urlopen('https://my_host.example.com/')\n",
     "network-host-not-allowed", "urllib.request", "*.example.com"},
};

// ---- classes and decorators ----
const Case kClassCases[] = {
    {"Del", "class A:\n    def __del__(self):\n        pass\n", "class-dangerous-method"},
    {"Getattr", "class A:\n    def __getattr__(self, n):\n        pass\n", "class-dangerous-method"},
    {"Getattribute", "class A:\n    def __getattribute__(self, n):\n        pass\n",
     "class-dangerous-method"},
    {"InitSubclass", "class A:\n    def __init_subclass__(cls):\n        pass\n", "class-dangerous-method"},
    {"ClassGetitem", "class A:\n    def __class_getitem__(cls, k):\n        pass\n",
     "class-dangerous-method"},
    {"SetName", "class A:\n    def __set_name__(self, o, n):\n        pass\n", "class-dangerous-method"},
    {"Reduce", "class A:\n    def __reduce__(self):\n        pass\n", "class-dangerous-method"},
    {"Metaclass", "class M:\n    pass\nclass A(metaclass=M):\n    pass\n", "class-metaclass"},
    {"SubclassType", "class M(type):\n    pass\n", "class-metaclass"},
    {"ThreeArgumentType", "A = type('A', (), {})\n", "class-metaclass"},
    {"ClassKeyword", "class B:\n    pass\nclass A(B, flag=True):\n    pass\n", "class-metaclass"},
    {"DecoratorBuiltin", "@print\ndef f():\n    pass\n", "decorator-not-allowed"},
    {"DecoratorLambda", "@(lambda f: f)\ndef f():\n    pass\n", "decorator-not-allowed"},
    {"DecoratorSubscript", "d = [print]\n@d[0]\ndef f():\n    pass\n", "decorator-not-allowed"},
    // Operator overloads that run code without a call.
    {"OperatorOverloadAssignedExec", "class A:\n    __add__ = exec\nA() + 'print(1)'\n",
     "dynamic-code"},
    {"OperatorOverloadDunderStore", "class A:\n    __add__ = print\n", "reflection-dunder"},
    {"ClassGetitemAssigned", "class A:\n    __class_getitem__ = classmethod(print)\nA['x']\n",
     "reflection-dunder"},
};

// ---- re-exports ----
const Case kReexportCases[] = {
    {"PlatformOs", "import platform\nplatform.os\n", "reexport-module", "platform"},
    {"WarningsSys", "import warnings\nwarnings.sys.modules\n", "reexport-module", "warnings"},
    {"RandomOs", "import random\nrandom._os.system('id')\n", "reexport-module"},
    {"FromPlatformImportOs", "from platform import os\n", "reexport-module", "platform"},
    {"DataclassesInspect", "import dataclasses\ndataclasses.inspect.currentframe()\n", "reexport-module"},
    {"TypingSys", "import typing\ntyping.sys.exit()\n", "reexport-module"},
    {"ReCopyreg", "import re\nre.copyreg\n", "reexport-module"},
    {"FunctoolsRlockFromThread", "import functools\nfunctools.RLock()\n", "reexport-dangerous-callable"},
    {"RandomUrandomFromPosix", "import random\nrandom._urandom(4)\n", "reexport-dangerous-callable"},
};

INSTANTIATE_TEST_SUITE_P(Source, Rejects, ::testing::ValuesIn(kSourceCases), case_name);
INSTANTIATE_TEST_SUITE_P(Imports, Rejects, ::testing::ValuesIn(kImportCases), case_name);
INSTANTIATE_TEST_SUITE_P(DynamicCode, Rejects, ::testing::ValuesIn(kDynamicCodeCases), case_name);
INSTANTIATE_TEST_SUITE_P(ProcessExec, Rejects, ::testing::ValuesIn(kProcessCases), case_name);
INSTANTIATE_TEST_SUITE_P(Reflection, Rejects, ::testing::ValuesIn(kReflectionCases), case_name);
INSTANTIATE_TEST_SUITE_P(FormatStrings, Rejects, ::testing::ValuesIn(kFormatCases), case_name);
INSTANTIATE_TEST_SUITE_P(Serialization, Rejects, ::testing::ValuesIn(kSerializationCases), case_name);
INSTANTIATE_TEST_SUITE_P(Files, Rejects, ::testing::ValuesIn(kFileCases), case_name);
INSTANTIATE_TEST_SUITE_P(Network, Rejects, ::testing::ValuesIn(kNetworkCases), case_name);
INSTANTIATE_TEST_SUITE_P(Classes, Rejects, ::testing::ValuesIn(kClassCases), case_name);
INSTANTIATE_TEST_SUITE_P(Reexports, Rejects, ::testing::ValuesIn(kReexportCases), case_name);

// ---- accepted look-alikes: zero findings ----
class Accepts : public ::testing::TestWithParam<Case> {};

TEST_P(Accepts, WithNoFindings) {
  const Case& c = GetParam();
  Report report = test::check_directly(c.source, policy_for(c));
  EXPECT_EQ(report.verdict, Verdict::accept) << c.source << "\n" << describe(report);
  EXPECT_TRUE(report.findings.empty()) << c.source << "\n" << describe(report);
}

const Case kLookAlikes[] = {
    {"UserFunctionNamedRun", "def run(x):\n    return x\nrun(1)\n", ""},
    {"DictKeyEval", "d = {'eval': 1, 'exec': 2}\nprint(d['eval'])\n", ""},
    {"MethodNamedSystem", "class Shell:\n    def system(self, c):\n        return c\nShell().system('id')\n", ""},
    {"ReCompile", "import re\npattern = re.compile(r'a+')\n", ""},
    {"SelfCache",
     "class C:\n    def __init__(self):\n        self._cache = {}\n    def get(self, k):\n"
     "        return self._cache.get(k)\n",
     ""},
    {"ClsPrivate", "class C:\n    _n = 0\n    @classmethod\n    def bump(cls):\n        cls._n += 1\n", ""},
    {"SelfInLambdaInMethod", "class C:\n    def m(self):\n        return sorted([1], key=lambda v: self._w)\n", ""},
    {"SuperInit", "class A:\n    def __init__(self):\n        pass\nclass B(A):\n    def __init__(self):\n"
                  "        super().__init__()\n", ""},
    {"MainGuard", "def main():\n    pass\nif __name__ == '__main__':\n    main()\n", ""},
    {"OsEnvironGet", "import os\nhome = os.environ.get('HOME', '')\n", "", "os"},
    {"OsPathJoin", "import os\np = os.path.join('a', 'b')\n", "", "os"},
    {"OrdinaryDunderMethods",
     "class V:\n    def __init__(self, x):\n        self.x = x\n    def __repr__(self):\n"
     "        return f'V({self.x})'\n    def __eq__(self, o):\n        return self.x == o.x\n"
     "    def __add__(self, o):\n        return V(self.x + o.x)\n",
     ""},
    {"FormatWithoutAttributeFields", "s = '{} {:.2f} {name!r:>10}'.format(1, 2.5, name='x')\n", ""},
    {"FstringAttributes", "class P:\n    x = 1\np = P()\ns = f'{p.x:.2f}'\n", ""},
    {"WriteInWorkdir", "with open('out.txt', 'w') as f:\n    f.write('x')\n", ""},
    {"WriteInTmp", "open('/tmp/x.json', 'w').close()\n", ""},
    {"ReadInWorkdir", "with open('/work/data.csv') as f:\n    rows = f.read()\n", ""},
    {"ConstantOutputPath", "OUT = '/work/out.json'\nwith open(OUT, 'w') as f:\n    f.write('{}')\n", ""},
    {"PathlibInWorkdir", "from pathlib import Path\n(Path('/work') / 'r.txt').write_text('x')\n", "", "pathlib"},
    {"AllowedHost", "import urllib.request\nurllib.request.urlopen('https://api.example.com/v1/items')\n",
     "", "urllib.request", "api.example.com"},
    {"AllowedWildcardHost", "import urllib.request\nurllib.request.urlopen('https://eu.api.example.org:8443/x')\n",
     "", "urllib.request", "*.example.org"},
    {"AllowedHostWithFstringPath",
     "import urllib.request\nitem = 3\nurllib.request.urlopen(f'https://api.example.com/items/{item}')\n",
     "", "urllib.request", "api.example.com"},
    {"AllowedCidr", "import urllib.request\nurllib.request.urlopen('http://10.1.2.3/x')\n",
     "", "urllib.request", "10.0.0.0/8"},
    // An IDN rule (egress converts it to punycode) matches both spellings in code.
    {"IdnHostUnicode", "import urllib.request\nurllib.request.urlopen('https://bücher.example/x')\n",
     "", "urllib.request", "bücher.example"},
    {"IdnHostPunycode", "import urllib.request\nurllib.request.urlopen('https://xn--bcher-kva.example/x')\n",
     "", "urllib.request", "bücher.example"},
    {"SocketConnectRulePort",
     "import socket\ns = socket.socket()\ns.connect(('api.example.com', 443))\n",
     "", "socket", "api.example.com:443"},
    {"UrlRulePort", "import urllib.request\nurllib.request.urlopen('https://api.example.com/')\n",
     "", "urllib.request", "api.example.com:443"},
    {"NamedtupleApi", "from collections import namedtuple\nP = namedtuple('P', 'x y')\nd = P(1, 2)._asdict()\n", ""},
    {"AllowedDecorators",
     "import functools\nimport dataclasses\n@dataclasses.dataclass(frozen=True)\nclass P:\n    x: int\n"
     "    @property\n    def double(self):\n        return self.x * 2\n    @staticmethod\n"
     "    def make():\n        return P(1)\n@functools.lru_cache(maxsize=None)\ndef fib(n):\n"
     "    return n if n < 2 else fib(n - 1) + fib(n - 2)\n",
     ""},
    {"PropertySetter",
     "class A:\n    @property\n    def v(self):\n        return self._v\n    @v.setter\n"
     "    def v(self, x):\n        self._v = x\n",
     ""},
    {"OwnDecorator", "def logged(f):\n    return f\n@logged\ndef g():\n    pass\n", ""},
    {"FutureImport", "from __future__ import annotations\n", ""},
    {"MatchStatement", "def f(c):\n    match c:\n        case {'op': 'add', 'x': x}:\n            return x\n"
                       "        case [a, *rest]:\n            return a\n        case _:\n            return None\n", ""},
    {"StrReplace", "s = 'a-b'.replace('-', '_')\n", ""},
    {"YamlSafeLoad", "import yaml\nyaml.safe_load('a: 1')\n", "", "yaml"},
    {"DictGet", "d = {}\nd.get('key')\n", ""},
};

INSTANTIATE_TEST_SUITE_P(LookAlikes, Accepts, ::testing::ValuesIn(kLookAlikes), case_name);

TEST(FailClosed, NulByteIsRejected) {
  Report report = test::check_directly(std::string("x = 1\0\nexec('id')\n", 18), Policy());
  EXPECT_TRUE(has_rule(report, "source-nul-byte")) << describe(report);
}

TEST(FailClosed, DeeplyNestedCodeIsRejected) {
  std::string source = "x = " + std::string(1000, '-') + "1\n";
  Report report = test::check_directly(source, Policy());
  EXPECT_TRUE(has_rule(report, "syntax-too-deep")) << describe(report);
}

TEST(Network, DynamicDestinationIsAWarningWhenTheToolHasHosts) {
  Case c{"", "import urllib.request\nurllib.request.urlopen(input())\n", "", "urllib.request",
         "api.example.com"};
  Report report = test::check_directly(c.source, policy_for(c));
  EXPECT_EQ(report.verdict, Verdict::accept) << describe(report);
  ASSERT_EQ(report.findings.size(), 1u) << describe(report);
  EXPECT_EQ(report.findings[0].rule, "network-dynamic-destination");
  EXPECT_EQ(report.findings[0].severity, Severity::warning);
}

TEST(Network, PolicyCanRejectDynamicDestinationsDespiteHosts) {
  Case c{"", "import urllib.request\nurllib.request.urlopen(input())\n", "", "urllib.request",
         "api.example.com"};
  Policy policy = policy_for(c);
  policy.non_literal_destination = NonLiteralDestination::reject;
  EXPECT_EQ(test::check_directly(c.source, policy).verdict, Verdict::reject);
}

TEST(Files, DynamicPathsPassWhenThePolicyAllowsThem) {
  Policy policy;
  policy.allow_dynamic_paths = true;
  Report report = test::check_directly("name = input()\nopen(name, 'w')\n", policy);
  EXPECT_EQ(report.verdict, Verdict::accept) << describe(report);
}

TEST(Files, WriteRootsComeFromThePolicy) {
  Policy policy;
  policy.write_roots = {"/data/out"};
  EXPECT_EQ(test::check_directly("open('/tmp/x', 'w')\n", policy).verdict, Verdict::reject);
  EXPECT_EQ(test::check_directly("open('/data/out/x', 'w')\n", policy).verdict, Verdict::accept);
}

TEST(Findings, CarryLineAndColumn) {
  Report report = test::check_directly("x = 1\ny = 2\nz = [1, eval('1')]\n", Policy());
  ASSERT_EQ(report.findings.size(), 1u) << describe(report);
  EXPECT_EQ(report.findings[0].rule, "dynamic-code");
  EXPECT_EQ(report.findings[0].line, 3);
  EXPECT_EQ(report.findings[0].col, 9);
}

}  // namespace
}  // namespace airlock::validate
