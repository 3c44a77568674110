#include "mcp/listed_schema.hpp"

#include <utility>
#include <vector>

#include "common/utf8_truncate.hpp"

namespace airlock::mcp {
namespace {

constexpr std::size_t kMaxProblemText = 200;  // a problem may quote the server's text

Error too_big(const std::string& what) {
  return Error::make("invalid_schema", "the schema " + what);
}

}  // namespace

Status check_schema_bounds(const nlohmann::json& schema) {
  std::vector<std::pair<const nlohmann::json*, std::size_t>> todo{{&schema, 1}};
  std::size_t nodes = 0;
  while (!todo.empty()) {
    auto [value, depth] = todo.back();
    todo.pop_back();
    if (++nodes > kMaxListedSchemaNodes)
      return too_big("has more than " + std::to_string(kMaxListedSchemaNodes) + " values");
    if (!value->is_structured()) continue;
    if (depth > kMaxListedSchemaDepth)
      return too_big("nests deeper than " + std::to_string(kMaxListedSchemaDepth) + " levels");
    for (const auto& child : *value) todo.emplace_back(&child, depth + 1);
  }
  // Bounded now: dump() recurses at most kMaxListedSchemaDepth levels.
  const std::size_t bytes =
      schema.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).size();
  if (bytes > kMaxListedSchemaBytes)
    return too_big("is larger than " + std::to_string(kMaxListedSchemaBytes) + " bytes");
  return {};
}

Result<std::shared_ptr<const policy::JsonSchema>> compile_listed_schema(
    const nlohmann::json& schema) {
  if (auto bounded = check_schema_bounds(schema); !bounded) return bounded.error();
  auto compiled = policy::JsonSchema::compile(schema);
  if (compiled.schema) return compiled.schema;
  if (compiled.problems.empty())
    return Error::make("invalid_schema", "the schema does not compile");
  const auto& first = compiled.problems.front();
  std::string text = (first.pointer.empty() ? "" : first.pointer + ": ") + first.message;
  if (text.size() > kMaxProblemText) text = truncate_utf8(text, kMaxProblemText) + "...";
  if (compiled.problems.size() > 1)
    text += " (and " + std::to_string(compiled.problems.size() - 1) + " more problems)";
  return Error::make("invalid_schema", "the schema does not compile: " + text);
}

}  // namespace airlock::mcp
