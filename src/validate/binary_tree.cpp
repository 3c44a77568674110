// SyntaxTree::from_binary: the parse worker's binary tree (native/ast_walker.c documents the
// format) read straight into the index, with no JSON in between. The bytes come from a
// sandboxed interpreter that hostile source has just been fed to, so every length, count and
// index is checked against what is left, nesting is bounded, and anything but exactly one
// well-formed tree is an error.
#include <cstdint>

#include "validate/syntax_tree.hpp"

namespace airlock::validate {

class BinaryTreeReader {
 public:
  BinaryTreeReader(SyntaxTree& tree, std::string_view bytes)
      : tree_(tree), begin_(bytes.data()), at_(begin_), end_(begin_ + bytes.size()) {}

  bool read(std::string& error) {
    if (!magic() || !type_table()) return fail(error);
    FieldData root;
    if (!value(root, 0)) return fail(error);
    if (at_ != end_) why_ = "bytes after the tree";
    else if (!root.node) why_ = "the tree is not a node";
    if (!why_.empty()) return fail(error);
    tree_.root_ = root.node;
    return true;
  }

 private:
  // Deeper than the worker ever sends (ast_dump.py stops at 400 nodes) and well within the
  // stack.
  // Above the worker's MAX_DEPTH (400, ast_dump.py), so no tree it sends is refused, and low
  // enough that the reader's recursion fits the stack under AddressSanitizer too (at 1000 a
  // fuzzed tree overflowed it there).
  static constexpr int kMaxNesting = 500;

  enum Tag : unsigned char {
    kNone = 0x00, kNode = 0x01, kList = 0x02, kString = 0x03, kInteger = 0x04, kTrue = 0x05,
    kFalse = 0x06, kConstant = 0x07,
  };

  bool fail(std::string& error) {
    error = "malformed binary tree at byte " + std::to_string(at_ - begin_) + ": " + why_;
    return false;
  }

  bool error(const char* why) {
    if (why_.empty()) why_ = why;
    return false;
  }

  bool byte(unsigned char& out) {
    if (at_ == end_) return error("truncated");
    out = static_cast<unsigned char>(*at_++);
    return true;
  }

  bool varint(std::uint64_t& out) {
    out = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      unsigned char b = 0;
      if (!byte(b)) return false;
      out |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return error("a varint longer than 64 bits");
  }

  bool string(std::string_view& out) {
    std::uint64_t size = 0;
    if (!varint(size)) return false;
    if (size > static_cast<std::uint64_t>(end_ - at_)) return error("a string longer than what is left");
    out = std::string_view(at_, size);
    at_ += size;
    return true;
  }

  // A count of items that each take at least one byte: never more than the bytes left.
  bool count(std::size_t& out) {
    std::uint64_t n = 0;
    if (!varint(n)) return false;
    if (n > static_cast<std::uint64_t>(end_ - at_)) return error("a count larger than what is left");
    out = static_cast<std::size_t>(n);
    return true;
  }

  bool magic() {
    if (end_ - at_ < 4 || std::string_view(at_, 4) != "ALT1") return error("no ALT1 magic");
    at_ += 4;
    return true;
  }

  bool type_table() {
    std::size_t types = 0;
    if (!count(types)) return false;
    tree_.types_.reserve(types);
    tree_.fields_.reserve(types);
    for (std::size_t i = 0; i < types; ++i) {
      std::string_view name;
      std::size_t fields = 0;
      if (!string(name) || !count(fields)) return false;
      tree_.types_.push_back(name);
      auto& names = tree_.fields_.emplace_back();
      names.reserve(fields);
      for (std::size_t f = 0; f < fields; ++f) {
        std::string_view field;
        if (!string(field)) return false;
        names.push_back(field);
      }
    }
    return true;
  }

  // One value into `field`, as SyntaxTree's JSON reading does: a node, a list's nodes and
  // strings (other items dropped), a string, an integer; None and booleans leave it empty.
  bool value(FieldData& field, int depth) {
    if (depth > kMaxNesting) return error("nested deeper than 500");
    unsigned char tag = 0;
    if (!byte(tag)) return false;
    switch (tag) {
      case kNone:
      case kTrue:
      case kFalse:
        return true;
      case kNode:
        return node(field.node, depth);
      case kList: {
        std::size_t n = 0;
        if (!count(n)) return false;
        for (std::size_t i = 0; i < n; ++i) {
          FieldData item;
          if (!value(item, depth + 1)) return false;
          if (item.node) field.nodes.push_back(item.node);
          else if (item.text.data()) field.texts.push_back(item.text);
        }
        return true;
      }
      case kString:
        return string(field.text);
      case kInteger: {
        std::uint64_t zigzag = 0;
        if (!varint(zigzag)) return false;
        field.has_integer = true;
        field.integer = static_cast<long>(static_cast<std::int64_t>(zigzag >> 1) ^
                                          -static_cast<std::int64_t>(zigzag & 1));
        return true;
      }
      case kConstant:
        return error("a constant outside a Constant's value");
      default:
        return error("an unknown value tag");
    }
  }

  bool node(const NodeData*& out, int depth) {
    std::uint64_t type = 0, line = 0, col = 0;
    if (!varint(type) || !varint(line) || !varint(col)) return false;
    if (type >= tree_.types_.size()) return error("a type index outside the type table");
    if (line > 1'000'000'000 || col > 1'000'000'000) return error("a position out of range");
    NodeData& data = tree_.nodes_.emplace_back();
    data.type = tree_.types_[type];
    data.line = line == 0 ? 0 : static_cast<int>(line - 1);
    data.col = line == 0 ? 0 : static_cast<int>(col);
    const auto& names = tree_.fields_[type];
    bool is_constant = data.type == "Constant";
    data.fields.reserve(names.size());
    for (std::string_view name : names) {
      FieldData field;
      field.name = name;
      if (is_constant && name == "value" && at_ != end_ && *at_ == kConstant) {
        ++at_;
        FieldData kind;
        kind.name = "vkind";
        if (!string(kind.text) || !string(field.text)) return false;
        data.fields.push_back(field);
        data.fields.push_back(kind);
        continue;
      }
      if (at_ != end_ && *at_ == kNone) {  // a missing field, as JSON null
        ++at_;
        continue;
      }
      if (!value(field, depth + 1)) return false;
      data.fields.push_back(std::move(field));
    }
    out = &data;
    return true;
  }

  SyntaxTree& tree_;
  const char* begin_;
  const char* at_;
  const char* end_;
  std::string why_;
};

std::unique_ptr<SyntaxTree> SyntaxTree::from_binary(std::string_view bytes, std::string& error) {
  std::unique_ptr<SyntaxTree> tree(new SyntaxTree());
  if (!BinaryTreeReader(*tree, bytes).read(error)) return nullptr;
  return tree;
}

}  // namespace airlock::validate
