#include "pipeline/stages/check_input.hpp"

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

namespace airlock::pipeline {

struct JsonSchema::Impl {
  nlohmann::json document;  // the adapter refers into it
  valijson::Schema schema;
};

namespace {

// valijson's context ("<root>", "[name]", "[0]") as an RFC 6901 JSON pointer.
std::string to_pointer(const std::vector<std::string>& context) {
  std::string pointer;
  for (const auto& part : context) {
    if (part == "<root>") continue;
    std::string token = part.size() >= 2 && part.front() == '[' && part.back() == ']'
                            ? part.substr(1, part.size() - 2)
                            : part;
    std::string escaped;
    for (char c : token) escaped += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
    pointer += "/" + escaped;
  }
  return pointer.empty() ? "/" : pointer;
}

}  // namespace

Result<std::shared_ptr<JsonSchema>> JsonSchema::compile(const nlohmann::json& schema) {
  auto s = std::make_shared<JsonSchema>();
  s->impl = std::make_shared<Impl>();
  s->impl->document = schema;
  try {
    valijson::SchemaParser parser;
    valijson::adapters::NlohmannJsonAdapter adapter(s->impl->document);
    parser.populateSchema(adapter, s->impl->schema);
  } catch (const std::exception& e) {
    return Error::make("config", std::string("not a usable JSON Schema: ") + e.what());
  }
  return s;
}

std::optional<std::pair<std::string, std::string>> JsonSchema::check(const nlohmann::json& value) const {
  valijson::Validator validator;
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter target(value);
  if (validator.validate(impl->schema, target, &results)) return std::nullopt;
  // The deepest error says most about what is wrong.
  valijson::ValidationResults::Error error, best;
  std::size_t depth = 0;
  while (results.popError(error))
    if (error.context.size() >= depth) {
      depth = error.context.size();
      best = error;
    }
  return std::make_pair(to_pointer(best.context), best.description);
}

Result<std::unique_ptr<CheckInputStage>> CheckInputStage::create(const policy::Config& config) {
  auto stage = std::make_unique<CheckInputStage>();
  for (const auto& tool : config.tools) {
    auto schema = JsonSchema::compile(tool.input_schema);
    if (!schema) return Error::make("config", tool.where + ": tool " + tool.name + ".inputSchema: " + schema.error().message);
    stage->schemas_[tool.name] = *schema;
  }
  return stage;
}

std::optional<InvocationError> CheckInputStage::run(Invocation& inv) {
  // The body: {"arguments": {...}} and nothing else.
  nlohmann::json body = nlohmann::json::parse(inv.raw_body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded())
    return InvocationError{"invalid_input", "the request body is not valid JSON", "denied", 400, ""};
  if (!body.is_object() || !body.contains("arguments"))
    return InvocationError{"invalid_input", "the request body must be {\"arguments\": {...}}", "denied", 400,
                           "/arguments"};
  for (const auto& [key, value] : body.items())
    if (key != "arguments")
      return InvocationError{"invalid_input", "unknown field '" + key + "' in the request body", "denied", 400,
                             "/" + key};
  inv.arguments = body["arguments"];
  if (!inv.arguments.is_object())
    return InvocationError{"invalid_input", "arguments must be a JSON object", "denied", 400, "/arguments"};
  if (auto problem = schemas_.at(inv.tool_name)->check(inv.arguments))
    return InvocationError{"invalid_input", "arguments" + problem->first + ": " + problem->second, "denied",
                           400, "/arguments" + (problem->first == "/" ? std::string() : problem->first)};
  return std::nullopt;
}

}  // namespace airlock::pipeline
