// The parse worker's C tree walk (native/ast_walker.c) against its Python walk: for the
// benign corpus, the published escapes, constructs chosen for their odd values and the
// interpreter's own standard library, both must give the same indexed tree, node for node and
// field for field. The rule tests run on the Python walk's JSON; this is what lets the fast
// path rely on them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "escapes.hpp"
#include "read_file.hpp"
#include "validate/parse_worker.hpp"
#include "validate/validate.hpp"

namespace airlock::validate {
namespace {

using test::read_file;

ParseWorkerConfig config(bool native) {
  ParseWorkerConfig c;
  c.script = default_parser_script();
  if (native) c.native_walker = default_native_walker();
  c.request_timeout = std::chrono::milliseconds(30'000);
  return c;
}

std::string position(const Node& n) {
  return std::string(n.type_name()) + "@" + std::to_string(n.line()) + ":" + std::to_string(n.col());
}

// The first difference between two trees, or "".
std::string difference(const Node& a, const Node& b, const std::string& path) {
  std::string here = path + "/" + position(a);
  if (a.type_name() != b.type_name() || a.line() != b.line() || a.col() != b.col())
    return here + " vs " + position(b);
  const auto& fa = a.data()->fields;
  const auto& fb = b.data()->fields;
  if (fa.size() != fb.size())
    return here + ": " + std::to_string(fa.size()) + " vs " + std::to_string(fb.size()) + " fields";
  for (std::size_t i = 0; i < fa.size(); ++i) {
    const FieldData& x = fa[i];
    const FieldData& y = fb[i];
    std::string at = here + "." + std::string(x.name);
    if (x.name != y.name) return at + ": field " + std::string(y.name);
    if (x.text != y.text) return at + ": \"" + std::string(x.text) + "\" vs \"" + std::string(y.text) + "\"";
    if (x.texts != y.texts) return at + ": string lists differ";
    if (x.has_integer != y.has_integer || x.integer != y.integer) return at + ": integers differ";
    if ((x.node == nullptr) != (y.node == nullptr)) return at + ": node vs none";
    if (x.node) {
      std::string d = difference(Node(x.node), Node(y.node), at);
      if (!d.empty()) return d;
    }
    if (x.nodes.size() != y.nodes.size()) return at + ": list lengths differ";
    for (std::size_t k = 0; k < x.nodes.size(); ++k) {
      std::string d = difference(Node(x.nodes[k]), Node(y.nodes[k]), at + "[" + std::to_string(k) + "]");
      if (!d.empty()) return d;
    }
  }
  return "";
}

class NativeWalk : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (default_native_walker().empty()) return;
    native_ = new ParseWorker(config(true));
    python_ = new ParseWorker(config(false));
  }
  static void TearDownTestSuite() {
    delete native_;
    delete python_;
    native_ = python_ = nullptr;
  }
  void SetUp() override {
    ASSERT_FALSE(default_native_walker().empty())
        << "this build has no C tree walk (python3-dev missing?); it is the default path";
  }

  // Parses `source` both ways and compares; returns the number of nodes compared.
  static void expect_same_tree(const std::string& source, const std::string& name) {
    auto fast = native_->parse(source);
    auto slow = python_->parse(source);
    ASSERT_TRUE(fast.ok()) << name << ": " << fast.error().message;
    ASSERT_TRUE(slow.ok()) << name << ": " << slow.error().message;
    ASSERT_EQ(fast->reply.value("ok", false), slow->reply.value("ok", false)) << name;
    if (!slow->reply.value("ok", false)) {
      EXPECT_EQ(fast->reply, slow->reply) << name;  // failures are JSON either way
      return;
    }
    ASSERT_FALSE(fast->tree_bytes.empty()) << name << ": the worker did not use the C walk";
    ASSERT_TRUE(slow->tree_bytes.empty()) << name;
    EXPECT_EQ(fast->reply["identifiers"], slow->reply["identifiers"]) << name;
    std::string error;
    auto a = SyntaxTree::from_binary(fast->tree_bytes, error);
    ASSERT_TRUE(a) << name << ": " << error;
    SyntaxTree b(slow->reply);
    ASSERT_TRUE(b.root().is("Module")) << name;
    EXPECT_EQ(difference(a->root(), b.root(), ""), "") << name;
  }

  static ParseWorker* native_;
  static ParseWorker* python_;
};
ParseWorker* NativeWalk::native_ = nullptr;
ParseWorker* NativeWalk::python_ = nullptr;

TEST_F(NativeWalk, BenignCorpus) {
  int programs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(AIRLOCK_VALIDATE_BENIGN_DIR)) {
    if (entry.path().extension() != ".py") continue;
    ++programs;
    expect_same_tree(read_file(entry.path()), entry.path().filename().string());
  }
  EXPECT_GE(programs, 50);
}

TEST_F(NativeWalk, PublishedEscapes) {
  for (const auto& escape : test::kPublishedEscapes) expect_same_tree(escape.source, escape.name);
}

TEST_F(NativeWalk, OddValues) {
  const std::string sources[] = {
      // every kind of constant, and strings the C walk must re-encode
      "a = (b'\\x00\\xff\\x80abc', 1j, 2.5e300, 10**400, 123456789012345678901234567890, ...,"
      " None, True, False, -0.0, 0x7fffffffffffffff, 'caf\\u00e9', '\\ud800', '\\U0001f600')\n",
      "x = ''\ny = b''\n",
      // lists with None items (Dict keys for **), lists of strings (global, nonlocal), ints
      "d = {**a, 'k': 1, **b}\ndef f():\n    global g1, g2\n    def h():\n        nonlocal q\n",
      "from ..pkg.mod import (a as b, c)\nfrom . import x\nimport os.path as p\n",
      "f'{x!r:>{width}} {y!s} {z!a} {w=}'\n",
      "match p:\n    case {'k': [1, *rest]} | Point(x=0, y=_) if rest: pass\n"
      "    case str() as s: pass\n    case None | True: pass\n",
      "try:\n    pass\nexcept* ValueError as e:\n    raise\n",
      "async def g():\n    async with a as b, c:\n        [x async for x in y if await z]\n",
      "@dec(1)\nclass C(B, metaclass=M):\n    x: int = 1\n    def m(self, /, a, *args, b=2, **kw) -> None:"
      " return lambda q=3: (yield from q)\n",
      "a[1:2:3, ::] = b[...]; del a.b, c[0]; x += 1; (y := 5); print(*a, **b)\n",
      "é = 1\nｘ = 2\n",  // NFKC-normalised identifiers
      "",
      "x = 1 if y else 2; assert x, 'm'; not a < b <= c is not d in e\n",
      "def f(): pass  # type: ignore\n",
      // failures: the same JSON either way
      "def (:\n",
      "x = (" + std::string(600, '(') + std::string(601, ')') + "\n",
      // parses, but nests deeper than the worker's 400 nodes
      "x = " + std::string(500, '-') + "1\n",
  };
  int i = 0;
  for (const std::string& source : sources) expect_same_tree(source, "odd value " + std::to_string(i++));
}

// Every module at the top of the interpreter's standard library: a large, varied body of real
// code that neither walk was written against.
TEST_F(NativeWalk, StandardLibrary) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/usr/lib/python3.11")) {
    if (entry.path().extension() != ".py" || entry.file_size() > 200'000) continue;
    ++files;
    expect_same_tree(read_file(entry.path()), entry.path().filename().string());
    if (HasFatalFailure()) return;
  }
  EXPECT_GE(files, 100);
}

}  // namespace
}  // namespace airlock::validate
