// A read-only view of one node of the syntax tree the parse worker emits (ast_dump.py):
// {"_type": "Call", "lineno": 3, "col_offset": 4, "func": {...}, "args": [...]}.
#pragma once

#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace airlock::validate {

using Json = nlohmann::json;

class Node {
 public:
  Node() = default;
  explicit Node(const Json* json) : json_(json && is_node(*json) ? json : nullptr) {}

  static bool is_node(const Json& json);

  bool valid() const { return json_ != nullptr; }
  explicit operator bool() const { return valid(); }
  bool is(std::string_view type) const { return valid() && type_name() == type; }
  std::string_view type_name() const;
  int line() const;    // 1-based, 0 when the node has no position
  int col() const;     // 1-based byte column, 0 when the node has no position

  Node child(std::string_view field) const;             // a single node field, or invalid
  std::vector<Node> children(std::string_view field) const;  // a list field (missing = empty)
  std::string_view text(std::string_view field) const;  // an identifier/string field, or ""
  // Name/Attribute/Subscript/...: "Load", "Store" or "Del" (the worker leaves Load out).
  std::string_view ctx() const;
  std::vector<std::string_view> texts(std::string_view field) const;  // a list of strings

  // Constant nodes: the value's kind ("str", "bytes", "int", ...; the worker leaves "str"
  // out) and text.
  std::string_view constant_kind() const;
  std::string_view constant_text() const;
  bool is_string_constant() const { return is("Constant") && constant_kind() == "str"; }

  // Every node directly below this one, in field order.
  template <typename F>
  void for_each_child(F&& visit) const {
    if (!json_) return;
    for (const auto& [key, value] : json_->items()) {
      if (value.is_object()) {
        if (is_node(value)) visit(Node(&value));
      } else if (value.is_array()) {
        for (const auto& item : value)
          if (item.is_object() && is_node(item)) visit(Node(&item));
      }
    }
  }

  const Json* json() const { return json_; }
  bool operator==(const Node& other) const { return json_ == other.json_; }

 private:
  const Json* json_ = nullptr;
};

// Whether `type` is an ast node class of Python 3.`minor` (the engine's list; anything else
// the parser emits is an unknown node and rejected).
bool is_known_node_type(std::string_view type, int minor);
// The newest 3.x the list describes.
int newest_known_python_minor();

}  // namespace airlock::validate
