#include "validate/syntax_tree.hpp"

#include <array>
#include <unordered_map>

namespace airlock::validate {

bool SyntaxTree::is_node(const Json& json) {
  if (!json.is_object()) return false;
  auto it = json.find("_type");
  return it != json.end() && it->is_string();
}

SyntaxTree::SyntaxTree(const Json& reply_or_root) {
  if (is_node(reply_or_root)) {
    root_ = add(reply_or_root);
    return;
  }
  // A worker reply: {"types": [...], "fields": [[...]], "tree": [...]}.
  if (!reply_or_root.is_object()) return;
  auto types = reply_or_root.find("types");
  auto fields = reply_or_root.find("fields");
  auto tree = reply_or_root.find("tree");
  if (tree == reply_or_root.end()) return;
  if (is_node(*tree)) {
    root_ = add(*tree);
    return;
  }
  if (types == reply_or_root.end() || fields == reply_or_root.end() || !types->is_array() ||
      !fields->is_array() || types->size() != fields->size())
    return;
  // (string_views into the reply: no temporaries)
  auto view = [](const Json& j) {
    return j.is_string() ? std::string_view(j.get_ref<const std::string&>()) : std::string_view();
  };
  for (const auto& t : *types) types_.push_back(view(t));
  for (const auto& f : *fields) {
    auto& names = fields_.emplace_back();
    if (f.is_array())
      for (const auto& n : f) names.push_back(view(n));
  }
  if (is_compact_node(*tree)) root_ = add_compact(*tree);
}

bool SyntaxTree::is_compact_node(const Json& json) {
  return json.is_array() && json.size() >= 3 && json[0].is_number_unsigned();
}

void SyntaxTree::set_value(FieldData& field, const Json& value) {
  if (value.is_number_integer()) {
    field.has_integer = true;
    field.integer = value.get<long>();
  } else if (value.is_string()) {
    field.text = value.get_ref<const std::string&>();
  } else if (is_compact_node(value)) {
    field.node = add_compact(value);
  } else if (value.is_array()) {
    for (const auto& item : value) {
      if (is_compact_node(item)) field.nodes.push_back(add_compact(item));
      else if (item.is_string()) field.texts.push_back(item.get_ref<const std::string&>());
    }
  } else if (value.is_object()) {
    // A Constant's non-str value: {"vkind": ..., "value": ...}.
    auto text = value.find("value");
    if (text != value.end() && text->is_string()) field.text = text->get_ref<const std::string&>();
  }
}

const NodeData* SyntaxTree::add_compact(const Json& json) {
  auto index = json[0].get<std::size_t>();
  NodeData& data = nodes_.emplace_back();
  data.type = index < types_.size() ? types_[index] : std::string_view("<unknown type index>");
  if (json[1].is_number_integer()) data.line = json[1].get<int>();
  if (json[2].is_number_integer()) data.col = json[2].get<int>() + 1;
  static const std::vector<std::string_view> kNoNames;
  const auto& names = index < fields_.size() ? fields_[index] : kNoNames;
  for (std::size_t i = 3; i < json.size(); ++i) {
    const Json& value = json[i];
    if (value.is_null()) continue;
    FieldData field;
    field.name = i - 3 < names.size() ? names[i - 3] : std::string_view("<extra>");
    set_value(field, value);
    if (value.is_object() && field.name == "value") {
      auto kind = value.find("vkind");
      FieldData vkind;
      vkind.name = "vkind";
      if (kind != value.end() && kind->is_string()) vkind.text = kind->get_ref<const std::string&>();
      data.fields.push_back(std::move(field));
      data.fields.push_back(std::move(vkind));
      continue;
    }
    data.fields.push_back(std::move(field));
  }
  return &data;
}

const NodeData* SyntaxTree::add(const Json& json) {
  NodeData& data = nodes_.emplace_back();
  for (const auto& [key, value] : json.items()) {
    if (key == "_type") {
      data.type = value.get_ref<const std::string&>();
      continue;
    }
    if (key == "lineno") {
      if (value.is_number_integer()) data.line = value.get<int>();
      continue;
    }
    if (key == "col_offset") {
      if (value.is_number_integer()) data.col = value.get<int>() + 1;
      continue;
    }
    FieldData field;
    field.name = key;
    if (value.is_number_integer()) {
      field.has_integer = true;
      field.integer = value.get<long>();
    } else if (value.is_string()) {
      field.text = value.get_ref<const std::string&>();
    } else if (is_node(value)) {
      field.node = add(value);
    } else if (value.is_array()) {
      for (const auto& item : value) {
        if (is_node(item)) field.nodes.push_back(add(item));
        else if (item.is_string()) field.texts.push_back(item.get_ref<const std::string&>());
      }
    }
    data.fields.push_back(std::move(field));
  }
  return &data;
}


Node Node::child(std::string_view field) const {
  if (!data_) return {};
  const FieldData* f = data_->field(field);
  return f ? Node(f->node) : Node();
}

std::vector<Node> Node::children(std::string_view field) const {
  std::vector<Node> out;
  if (!data_) return out;
  const FieldData* f = data_->field(field);
  if (!f) return out;
  out.reserve(f->nodes.size());
  for (const NodeData* item : f->nodes) out.emplace_back(item);
  return out;
}

std::string_view Node::text(std::string_view field) const {
  if (!data_) return {};
  const FieldData* f = data_->field(field);
  return f ? f->text : std::string_view();
}

std::vector<std::string_view> Node::texts(std::string_view field) const {
  if (!data_) return {};
  const FieldData* f = data_->field(field);
  return f ? f->texts : std::vector<std::string_view>();
}

long Node::integer(std::string_view field, long missing) const {
  if (!data_) return missing;
  const FieldData* f = data_->field(field);
  return f && f->has_integer ? f->integer : missing;
}

std::string_view Node::ctx() const {
  std::string_view value = text("ctx");
  return value.empty() ? std::string_view("Load") : value;
}

std::string_view Node::constant_kind() const {
  if (!is("Constant")) return {};
  const FieldData* f = data_->field("vkind");
  return f ? f->text : std::string_view("str");
}

std::string_view Node::constant_text() const {
  if (!is("Constant")) return {};
  return text("value");
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
