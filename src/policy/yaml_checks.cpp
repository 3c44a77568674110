#include "policy/yaml_checks.hpp"

#include <yaml-cpp/eventhandler.h>

#include <map>
#include <sstream>

#include "policy/config.hpp"

namespace airlock::policy {
namespace {

// Thrown from the event handler to stop the parser: nothing after it is looked at.
struct Stop {
  YAML::Mark mark;
  std::string message;
};

constexpr const char* kNoAliases =
    "anchors and aliases are not allowed in the configuration (write the value out)";

class DocumentScan final : public YAML::EventHandler {
 public:
  explicit DocumentScan(std::vector<ConfigIssue>& issues) : issues_(issues) {}
  bool refused() const { return refused_; }

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnAnchor(const YAML::Mark& mark, const std::string& name) override {
    refuse(mark, "anchor '&" + name + "': " + kNoAliases);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override {
    // Each anchor is reported where it is defined; its uses would only repeat it.
    if (!refused_) refuse(mark, std::string("alias: ") + kNoAliases);
    leaf(mark, "");
  }
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { leaf(mark, ""); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string& value) override {
    leaf(mark, value);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    open(mark, false);
  }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    open(mark, true);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapEnd() override { close(); }

 private:
  // An open mapping or sequence, and where in it the parser is.
  struct Frame {
    bool is_map = false;
    bool at_key = true;                      // mapping: the next node is a key
    std::string key;                         // mapping: the current key
    std::size_t index = 0;                   // sequence: the current item
    std::map<std::string, YAML::Mark> keys;  // mapping: each key and where it was first
  };

  void refuse(const YAML::Mark& mark, std::string message) {
    issues_.push_back({mark, std::move(message)});
    refused_ = true;
  }

  void leaf(const YAML::Mark& mark, const std::string& text) {
    begin(mark, &text);
    end();
  }

  void open(const YAML::Mark& mark, bool is_map) {
    begin(mark, nullptr);
    if (static_cast<int>(stack_.size()) >= kMaxConfigNesting)
      throw Stop{mark, "nested more than " + std::to_string(kMaxConfigNesting) +
                           " levels deep (the limit)"};
    stack_.push_back(Frame{});
    stack_.back().is_map = is_map;
  }

  void close() {
    stack_.pop_back();
    end();
  }

  // A node starts; if it is a mapping's key, it must be text and new in that mapping.
  void begin(const YAML::Mark& mark, const std::string* text) {
    if (stack_.empty() || !stack_.back().is_map || !stack_.back().at_key) return;
    Frame& map = stack_.back();
    if (!text) {
      map.key = "?";
      // Once: an unclosed '[' can make yaml-cpp see one in each level below.
      if (!complex_key_seen_)
        refuse(mark, path() + ": a key must be plain text, not a mapping or a list");
      complex_key_seen_ = true;
      return;
    }
    map.key = *text;
    auto [first, inserted] = map.keys.emplace(*text, mark);
    if (!inserted)
      issues_.push_back({mark, path() + ": duplicate key '" + *text + "' (first at line " +
                                   std::to_string(first->second.line + 1) + ")"});
  }

  // A node ended: its parent moves on to the value, the next key or the next item.
  void end() {
    if (stack_.empty()) return;
    Frame& parent = stack_.back();
    if (parent.is_map)
      parent.at_key = !parent.at_key;
    else
      ++parent.index;
  }

  // "tools[0].risk": where the parser is, as the messages of the reader spell it.
  std::string path() const {
    std::string out;
    for (const auto& f : stack_) {
      if (f.is_map)
        out += (out.empty() ? "" : ".") + f.key;
      else
        out += "[" + std::to_string(f.index) + "]";
    }
    return out.empty() ? "the configuration" : out;
  }

  std::vector<ConfigIssue>& issues_;
  std::vector<Frame> stack_;
  bool refused_ = false;
  bool complex_key_seen_ = false;
};

}  // namespace

bool scan_document(const std::string& yaml, std::vector<ConfigIssue>& issues) {
  std::istringstream in(yaml);
  DocumentScan scan(issues);
  try {
    YAML::Parser parser(in);
    parser.HandleNextDocument(scan);
  } catch (const Stop& e) {
    issues.push_back({e.mark, e.message});
    return false;
  } catch (const YAML::Exception& e) {
    issues.push_back({e.mark, e.msg});
    return false;
  }
  return !scan.refused();
}

}  // namespace airlock::policy
