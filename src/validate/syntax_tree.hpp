// A read-only view of one node of the syntax tree the parse worker emits (ast_dump.py): in
// the worker's binary form (native/ast_walker.c), its compact JSON form, or as objects
// written by hand ({"_type": "Call", "lineno": 3, "col_offset": 4, "func": {...}, ...}).
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace airlock::validate {

using Json = nlohmann::json;

struct NodeData;

// One node of a SyntaxTree. Cheap to copy; valid while its tree lives.
class Node {
 public:
  Node() = default;
  explicit Node(const NodeData* data) : data_(data) {}

  bool valid() const { return data_ != nullptr; }
  explicit operator bool() const { return valid(); }
  bool is(std::string_view type) const {
    // (the rules ask this of every node many times: the first letter settles most asks
    // without a memcmp call)
    if (!valid()) return false;
    std::string_view mine = type_name();
    return mine.size() == type.size() && (type.empty() || mine[0] == type[0]) && mine == type;
  }
  std::string_view type_name() const;
  int line() const;    // 1-based, 0 when the node has no position
  int col() const;     // 1-based byte column, 0 when the node has no position

  Node child(std::string_view field) const;             // a single node field, or invalid
  std::vector<Node> children(std::string_view field) const;  // a list field (missing = empty)
  std::string_view text(std::string_view field) const;  // an identifier/string field, or ""
  std::vector<std::string_view> texts(std::string_view field) const;  // a list of strings
  long integer(std::string_view field, long missing = 0) const;  // an integer field
  // Name/Attribute/Subscript/...: "Load", "Store" or "Del" (the worker leaves Load out).
  std::string_view ctx() const;

  // Constant nodes: the value's kind ("str", "bytes", "int", ...; the worker leaves "str"
  // out) and text.
  std::string_view constant_kind() const;
  std::string_view constant_text() const;
  bool is_string_constant() const { return is("Constant") && constant_kind() == "str"; }

  // Every node directly below this one, in field order.
  template <typename F>
  void for_each_child(F&& visit) const;

  const NodeData* data() const { return data_; }
  bool operator==(const Node& other) const { return data_ == other.data_; }

 private:
  const NodeData* data_ = nullptr;
};

struct FieldData {
  std::string_view name;
  const NodeData* node = nullptr;        // a single node
  std::vector<const NodeData*> nodes;    // a list of nodes
  std::string_view text;                 // a string
  std::vector<std::string_view> texts;   // a list of strings
  bool has_integer = false;              // an integer (conversion, level, ...)
  long integer = 0;
};

struct NodeData {
  std::string_view type;
  int line = 0;
  int col = 0;
  std::vector<FieldData> fields;
  const FieldData* field(std::string_view name) const {
    for (const auto& f : fields)
      if (f.name == name) return &f;
    return nullptr;
  }
};

inline std::string_view Node::type_name() const { return data_ ? data_->type : std::string_view(); }
inline int Node::line() const { return data_ ? data_->line : 0; }
inline int Node::col() const { return data_ ? data_->col : 0; }

template <typename F>
void Node::for_each_child(F&& visit) const {
  if (!data_) return;
  for (const auto& field : data_->fields) {
    if (field.node) visit(Node(field.node));
    for (const NodeData* item : field.nodes) visit(Node(item));
  }
}

// The worker's tree, indexed once for the rules. The JSON or bytes it was made from must
// outlive it (names and strings are views into them). JSON comes in two forms: the worker's
// compact one (arrays: [type index, lineno, col_offset, field values...] with the reply's
// "types" and "fields" tables) and objects ({"_type": ..., "lineno": ..., field: value}) for
// trees written by hand.
class SyntaxTree {
 public:
  explicit SyntaxTree(const Json& reply_or_root);
  SyntaxTree(const SyntaxTree&) = delete;
  SyntaxTree& operator=(const SyntaxTree&) = delete;
  // The binary form (ast_walker.c documents it). Bytes that do not decode to exactly one
  // well-formed tree give null and say why in `error`: a compromised worker gets nothing
  // through but a rejection.
  static std::unique_ptr<SyntaxTree> from_binary(std::string_view bytes, std::string& error);
  Node root() const { return Node(root_); }
  static bool is_node(const Json& json);

 private:
  SyntaxTree() = default;
  friend class BinaryTreeReader;
  const NodeData* add(const Json& json);
  const NodeData* add_compact(const Json& json);
  static bool is_compact_node(const Json& json);
  void set_value(FieldData& field, const Json& value);
  std::deque<NodeData> nodes_;
  std::vector<std::string_view> types_;
  std::vector<std::vector<std::string_view>> fields_;
  const NodeData* root_ = nullptr;
};

// Whether `type` is an ast node class of Python 3.`minor` (the engine's list; anything else
// the parser emits is an unknown node and rejected).
bool is_known_node_type(std::string_view type, int minor);
// The newest 3.x the list describes.
int newest_known_python_minor();

}  // namespace airlock::validate
