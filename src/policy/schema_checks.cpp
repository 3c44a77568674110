// The checks of a tool schema that come before valijson: shape (the draft-07 meta-schema),
// `$ref`s, patterns; and the way back from a pointer in a schema to its line in the YAML.
#include <re2/re2.h>

#include <algorithm>
#include <map>
#include <optional>

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

#include "policy/schema_internal.hpp"

namespace airlock::policy {
extern const char* const kDraft7MetaSchema;  // generated from jsonschema's draft7.json
}

namespace airlock::policy::detail {
namespace {

// Keywords whose value is one schema, and those whose value is a map or list of schemas.
const char* const kSchemaKeywords[] = {"additionalItems", "additionalProperties", "contains",
                                       "propertyNames", "not", "if", "then", "else"};
const char* const kSchemaMapKeywords[] = {"properties", "patternProperties", "definitions",
                                          "$defs", "dependencies"};
const char* const kSchemaListKeywords[] = {"allOf", "anyOf", "oneOf"};

using Visit = std::function<void(nlohmann::json&, const std::string&)>;

void visit_child(nlohmann::json& parent, const std::string& key, const std::string& pointer,
                 const Visit& fn) {
  auto it = parent.find(key);
  if (it != parent.end()) for_each_schema(*it, pointer + "/" + escape_pointer_token(key), fn);
}

void visit_children(nlohmann::json& node, const std::string& pointer, const Visit& fn) {
  for (const char* key : kSchemaKeywords) visit_child(node, key, pointer, fn);
  for (const char* key : kSchemaMapKeywords) {
    auto it = node.find(key);
    if (it == node.end() || !it->is_object()) continue;
    std::string base = pointer + "/" + escape_pointer_token(key);
    for (auto& [name, value] : it->items())  // dependencies: lists of names are skipped below
      for_each_schema(value, base + "/" + escape_pointer_token(name), fn);
  }
  auto items = node.find("items");
  if (items != node.end() && items->is_array()) {
    for (std::size_t i = 0; i < items->size(); ++i)
      for_each_schema((*items)[i], pointer + "/items/" + std::to_string(i), fn);
  } else {
    visit_child(node, "items", pointer, fn);
  }
  for (const char* key : kSchemaListKeywords) {
    auto it = node.find(key);
    if (it == node.end() || !it->is_array()) continue;
    for (std::size_t i = 0; i < it->size(); ++i)
      for_each_schema((*it)[i], pointer + "/" + key + "/" + std::to_string(i), fn);
  }
}

// The meta-schema, parsed once.
const valijson::Schema& meta_schema() {
  static const nlohmann::json document = nlohmann::json::parse(kDraft7MetaSchema);
  static const auto schema = [] {
    auto s = std::make_unique<valijson::Schema>();
    valijson::SchemaParser parser;
    valijson::adapters::NlohmannJsonAdapter adapter(document);
    parser.populateSchema(adapter, *s);
    return s;
  }();
  return *schema;
}

bool is_prefix(const std::vector<std::string>& shorter, const std::vector<std::string>& longer) {
  return shorter.size() < longer.size() &&
         std::equal(shorter.begin(), shorter.end(), longer.begin());
}

// valijson reports an error at every level up from the bad value ("failed to validate against
// the schema of property 'properties'"); only the deepest say something.
std::vector<SchemaProblem> deepest_errors(valijson::ValidationResults& results) {
  std::vector<valijson::ValidationResults::Error> errors;
  valijson::ValidationResults::Error e;
  while (results.popError(e)) errors.push_back(e);
  std::vector<SchemaProblem> problems;
  for (const auto& error : errors) {
    bool has_deeper = std::any_of(errors.begin(), errors.end(), [&](const auto& other) {
      return is_prefix(error.context, other.context);
    });
    if (has_deeper) continue;
    // "Failed to validate against child schema #0" and the like only repeat the others.
    if (error.description.rfind("Failed to validate against", 0) == 0) continue;
    std::string pointer = context_pointer(error.context);
    auto same = std::find_if(problems.begin(), problems.end(),
                             [&](const SchemaProblem& p) { return p.pointer == pointer; });
    if (same == problems.end())
      problems.push_back({pointer, error.description});
    else if (same->message.find(error.description) == std::string::npos)
      same->message += "; " + error.description;
  }
  return problems;
}

void check_pattern(const std::string& pattern, const std::string& pointer,
                   std::vector<SchemaProblem>& problems) {
  RE2::Options options;
  options.set_log_errors(false);
  RE2 re(pattern, options);
  if (!re.ok())
    problems.push_back({pointer, "not a pattern RE2 can match in linear time ('" + pattern +
                                     "': " + re.error() + "); patterns are RE2 syntax, " +
                                     "without lookaround or backreferences"});
}

// The YAML child of `node` named by one pointer token (a key, or a list index).
YAML::Node yaml_child(const YAML::Node& node, const std::string& token) {
  if (node.IsMap()) {
    for (const auto& kv : node)
      if (kv.first.Scalar() == token) return kv.second;
  } else if (node.IsSequence() && !token.empty() &&
             token.find_first_not_of("0123456789") == std::string::npos && token.size() < 9) {
    std::size_t i = std::stoul(token);
    if (i < node.size()) return node[i];
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

std::string unescape_pointer_token(const std::string& token) {
  std::string out;
  for (std::size_t i = 0; i < token.size(); ++i) {
    if (token[i] == '~' && i + 1 < token.size()) {
      out += token[i + 1] == '1' ? '/' : '~';
      ++i;
    } else {
      out += token[i];
    }
  }
  return out;
}

using Graph = std::map<std::string, std::vector<std::string>>;

// The schemas that apply to the same value as the schema at `pointer` (no step into a child
// value): allOf/anyOf/oneOf entries, not, if/then/else, schema dependencies, and `$ref`.
std::vector<std::string> in_place_edges(const nlohmann::json& node, const std::string& pointer) {
  std::vector<std::string> edges;
  for (const char* key : kSchemaListKeywords)
    if (node.contains(key) && node[key].is_array())
      for (std::size_t i = 0; i < node[key].size(); ++i)
        edges.push_back(pointer + "/" + key + "/" + std::to_string(i));
  for (const char* key : {"not", "if", "then", "else"})
    if (node.contains(key)) edges.push_back(pointer + "/" + key);
  if (node.contains("dependencies") && node["dependencies"].is_object())
    for (const auto& [name, value] : node["dependencies"].items())
      if (value.is_object())
        edges.push_back(pointer + "/dependencies/" + escape_pointer_token(name));
  if (node.contains("$ref") && node["$ref"].is_string()) {
    std::string ref = node["$ref"];
    if (!ref.empty() && ref[0] == '#') edges.push_back(ref.substr(1));
  }
  return edges;
}

// A schema that applies to its own value through in-place keywords only would make valijson
// recurse for ever (when it parses a chain of $refs, or on every value it validates).
std::optional<std::string> find_in_place_cycle(const Graph& graph) {
  enum Color { white, grey, black };
  std::map<std::string, Color> color;
  for (const auto& [start, unused] : graph) {
    if (color[start] != white) continue;
    std::vector<std::pair<std::string, std::size_t>> stack{{start, 0}};
    color[start] = grey;
    while (!stack.empty()) {
      auto& [at, next] = stack.back();
      auto it = graph.find(at);
      if (it == graph.end() || next == it->second.size()) {
        color[at] = black;
        stack.pop_back();
        continue;
      }
      const std::string& to = it->second[next++];
      if (color[to] == grey) return to;
      if (color[to] == white) {
        color[to] = grey;
        stack.emplace_back(to, 0);
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::vector<SchemaProblem> check_ref_cycles(const nlohmann::json& schema) {
  Graph graph;
  nlohmann::json copy = schema;
  for_each_schema(copy, "", [&](nlohmann::json& node, const std::string& pointer) {
    graph[pointer] = in_place_edges(node, pointer);
  });
  auto cycle = find_in_place_cycle(graph);
  if (!cycle) return {};
  return {{*cycle, "this schema applies to its own value again through $ref, allOf, anyOf, "
                   "oneOf, not, if/then/else or dependencies, without a step into a property "
                   "or an item: a loop"}};
}

void for_each_schema(nlohmann::json& schema, const std::string& pointer, const Visit& fn) {
  if (!schema.is_object()) return;  // true/false, or not a schema (the meta-schema says so)
  visit_children(schema, pointer, fn);
  fn(schema, pointer);
}

std::string escape_pointer_token(const std::string& token) {
  std::string escaped;
  for (char c : token) escaped += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return escaped;
}

std::string context_pointer(const std::vector<std::string>& context) {
  std::string pointer;
  for (const auto& part : context) {
    if (part == "<root>") continue;
    bool bracketed = part.size() >= 2 && part.front() == '[' && part.back() == ']';
    pointer += "/" + escape_pointer_token(bracketed ? part.substr(1, part.size() - 2) : part);
  }
  return pointer;
}

std::vector<SchemaProblem> check_against_meta_schema(const nlohmann::json& schema) {
  valijson::Validator validator;
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter target(schema);
  if (validator.validate(meta_schema(), target, &results)) return {};
  auto problems = deepest_errors(results);
  if (problems.empty()) problems.push_back({"", "not a draft-07 JSON Schema"});
  return problems;
}

std::vector<SchemaProblem> check_refs(const nlohmann::json& schema) {
  std::vector<SchemaProblem> problems;
  nlohmann::json copy = schema;  // for_each_schema walks mutable values
  for_each_schema(copy, "", [&](nlohmann::json& node, const std::string& pointer) {
    auto ref = node.find("$ref");
    if (ref == node.end() || !ref->is_string()) return;
    std::string target = ref->get<std::string>();
    std::string where = pointer + "/$ref";
    if (target.empty() || target[0] != '#') {
      problems.push_back({where, "'" + target + "': only references inside the schema "
                                                "(\"#/...\") are allowed, not other documents"});
      return;
    }
    try {
      if (target.size() > 1 && !schema.contains(nlohmann::json::json_pointer(target.substr(1))))
        problems.push_back({where, "'" + target + "' does not resolve within the schema"});
    } catch (const std::exception&) {
      problems.push_back({where, "'" + target + "' is not a JSON pointer (\"#/definitions/x\")"});
    }
  });
  return problems;
}

std::vector<SchemaProblem> check_patterns(const nlohmann::json& schema) {
  std::vector<SchemaProblem> problems;
  nlohmann::json copy = schema;
  for_each_schema(copy, "", [&](nlohmann::json& node, const std::string& pointer) {
    auto pattern = node.find("pattern");
    if (pattern != node.end() && pattern->is_string())
      check_pattern(pattern->get<std::string>(), pointer + "/pattern", problems);
    auto properties = node.find("patternProperties");
    if (properties == node.end() || !properties->is_object()) return;
    for (const auto& [key, value] : properties->items())
      check_pattern(key, pointer + "/patternProperties/" + escape_pointer_token(key), problems);
  });
  return problems;
}

YAML::Mark mark_at(const YAML::Node& schema, const std::string& pointer) {
  YAML::Node node = schema;
  std::size_t start = pointer.empty() ? std::string::npos : 1;
  while (start != std::string::npos && start <= pointer.size()) {
    std::size_t slash = pointer.find('/', start);
    std::string token = pointer.substr(start, slash == std::string::npos ? slash : slash - start);
    YAML::Node child = yaml_child(node, unescape_pointer_token(token));
    if (!child.IsDefined()) break;
    node.reset(child);
    start = slash == std::string::npos ? slash : slash + 1;
  }
  return node.Mark();
}

}  // namespace airlock::policy::detail
