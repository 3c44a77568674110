#include "validate/syntax_tree.hpp"

#include <array>
#include <unordered_map>

namespace airlock::validate {

bool Node::is_node(const Json& json) {
  return json.is_object() && json.contains("_type") && json["_type"].is_string();
}

std::string_view Node::type_name() const {
  if (!json_) return {};
  return (*json_)["_type"].get_ref<const std::string&>();
}

namespace {
int int_field(const Json* json, const char* name) {
  if (!json) return 0;
  auto it = json->find(name);
  if (it == json->end() || !it->is_number_integer()) return 0;
  return it->get<int>();
}
}  // namespace

int Node::line() const { return int_field(json_, "lineno"); }

int Node::col() const {
  if (!json_ || !json_->contains("col_offset")) return 0;
  return int_field(json_, "col_offset") + 1;
}

Node Node::child(std::string_view field) const {
  if (!json_) return {};
  auto it = json_->find(field);
  if (it == json_->end()) return {};
  return Node(&*it);
}

std::vector<Node> Node::children(std::string_view field) const {
  std::vector<Node> out;
  if (!json_) return out;
  auto it = json_->find(field);
  if (it == json_->end() || !it->is_array()) return out;
  out.reserve(it->size());
  for (const auto& item : *it)
    if (is_node(item)) out.emplace_back(&item);
  return out;
}

std::string_view Node::text(std::string_view field) const {
  if (!json_) return {};
  auto it = json_->find(field);
  if (it == json_->end() || !it->is_string()) return {};
  return it->get_ref<const std::string&>();
}

std::string_view Node::ctx() const {
  std::string_view value = text("ctx");
  return value.empty() ? std::string_view("Load") : value;
}

std::vector<std::string_view> Node::texts(std::string_view field) const {
  std::vector<std::string_view> out;
  if (!json_) return out;
  auto it = json_->find(field);
  if (it == json_->end() || !it->is_array()) return out;
  for (const auto& item : *it)
    if (item.is_string()) out.push_back(item.get_ref<const std::string&>());
  return out;
}

std::string_view Node::constant_kind() const {
  if (!is("Constant")) return {};
  auto it = json_->find("vkind");
  if (it == json_->end()) return "str";
  return it->is_string() ? std::string_view(it->get_ref<const std::string&>()) : std::string_view();
}

std::string_view Node::constant_text() const {
  if (!is("Constant")) return {};
  auto it = json_->find("value");
  if (it == json_->end() || !it->is_string()) return {};
  return it->get_ref<const std::string&>();
}

namespace {

struct KnownType {
  std::string_view name;
  int since_minor;  // first Python 3.x that has it
};

// The concrete node classes of Python's ast module, 3.8 to 3.13 (Lib/ast.py, Parser/Python.asdl).
constexpr std::array kKnownTypes = {
    // mod
    KnownType{"Module", 8}, KnownType{"Interactive", 8}, KnownType{"Expression", 8},
    KnownType{"FunctionType", 8},
    // stmt
    KnownType{"FunctionDef", 8}, KnownType{"AsyncFunctionDef", 8}, KnownType{"ClassDef", 8},
    KnownType{"Return", 8}, KnownType{"Delete", 8}, KnownType{"Assign", 8},
    KnownType{"TypeAlias", 12}, KnownType{"AugAssign", 8}, KnownType{"AnnAssign", 8},
    KnownType{"For", 8}, KnownType{"AsyncFor", 8}, KnownType{"While", 8}, KnownType{"If", 8},
    KnownType{"With", 8}, KnownType{"AsyncWith", 8}, KnownType{"Match", 10},
    KnownType{"Raise", 8}, KnownType{"Try", 8}, KnownType{"TryStar", 11},
    KnownType{"Assert", 8}, KnownType{"Import", 8}, KnownType{"ImportFrom", 8},
    KnownType{"Global", 8}, KnownType{"Nonlocal", 8}, KnownType{"Expr", 8},
    KnownType{"Pass", 8}, KnownType{"Break", 8}, KnownType{"Continue", 8},
    // expr
    KnownType{"BoolOp", 8}, KnownType{"NamedExpr", 8}, KnownType{"BinOp", 8},
    KnownType{"UnaryOp", 8}, KnownType{"Lambda", 8}, KnownType{"IfExp", 8},
    KnownType{"Dict", 8}, KnownType{"Set", 8}, KnownType{"ListComp", 8},
    KnownType{"SetComp", 8}, KnownType{"DictComp", 8}, KnownType{"GeneratorExp", 8},
    KnownType{"Await", 8}, KnownType{"Yield", 8}, KnownType{"YieldFrom", 8},
    KnownType{"Compare", 8}, KnownType{"Call", 8}, KnownType{"FormattedValue", 8},
    KnownType{"JoinedStr", 8}, KnownType{"Constant", 8}, KnownType{"Attribute", 8},
    KnownType{"Subscript", 8}, KnownType{"Starred", 8}, KnownType{"Name", 8},
    KnownType{"List", 8}, KnownType{"Tuple", 8}, KnownType{"Slice", 8},
    // boolop, operator, unaryop, cmpop
    KnownType{"And", 8}, KnownType{"Or", 8}, KnownType{"Add", 8}, KnownType{"Sub", 8},
    KnownType{"Mult", 8}, KnownType{"MatMult", 8}, KnownType{"Div", 8}, KnownType{"Mod", 8},
    KnownType{"Pow", 8}, KnownType{"LShift", 8}, KnownType{"RShift", 8},
    KnownType{"BitOr", 8}, KnownType{"BitXor", 8}, KnownType{"BitAnd", 8},
    KnownType{"FloorDiv", 8}, KnownType{"Invert", 8}, KnownType{"Not", 8},
    KnownType{"UAdd", 8}, KnownType{"USub", 8}, KnownType{"Eq", 8}, KnownType{"NotEq", 8},
    KnownType{"Lt", 8}, KnownType{"LtE", 8}, KnownType{"Gt", 8}, KnownType{"GtE", 8},
    KnownType{"Is", 8}, KnownType{"IsNot", 8}, KnownType{"In", 8}, KnownType{"NotIn", 8},
    // the rest
    KnownType{"comprehension", 8}, KnownType{"ExceptHandler", 8}, KnownType{"arguments", 8},
    KnownType{"arg", 8}, KnownType{"keyword", 8}, KnownType{"alias", 8},
    KnownType{"withitem", 8}, KnownType{"match_case", 10}, KnownType{"MatchValue", 10},
    KnownType{"MatchSingleton", 10}, KnownType{"MatchSequence", 10},
    KnownType{"MatchMapping", 10}, KnownType{"MatchClass", 10}, KnownType{"MatchStar", 10},
    KnownType{"MatchAs", 10}, KnownType{"MatchOr", 10}, KnownType{"TypeIgnore", 8},
    KnownType{"TypeVar", 12}, KnownType{"ParamSpec", 12}, KnownType{"TypeVarTuple", 12},
};

}  // namespace

bool is_known_node_type(std::string_view type, int minor) {
  static const std::unordered_map<std::string_view, int> kSince = [] {
    std::unordered_map<std::string_view, int> since;
    for (const auto& known : kKnownTypes) since.emplace(known.name, known.since_minor);
    return since;
  }();
  auto it = kSince.find(type);
  return it != kSince.end() && minor >= it->second;
}

int newest_known_python_minor() { return 13; }

}  // namespace airlock::validate
