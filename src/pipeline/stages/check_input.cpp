#include "pipeline/stages/check_input.hpp"

#include "common/json_limits.hpp"

namespace airlock::pipeline {

Result<std::shared_ptr<const JsonSchema>> compiled_schema(
    const std::shared_ptr<const JsonSchema>& compiled, const nlohmann::json& schema,
    const std::string& what) {
  if (compiled) return compiled;
  auto result = JsonSchema::compile(schema);
  if (result.schema) return result.schema;
  const auto& first = result.problems.front();
  return Error::make("config", what + first.pointer + ": " + first.message);
}

Result<std::unique_ptr<CheckInputStage>> CheckInputStage::create(const policy::Config& config) {
  auto stage = std::make_unique<CheckInputStage>();
  stage->max_depth_ = config.server.max_json_depth;
  for (const auto& tool : config.tools) {
    auto schema = compiled_schema(tool.input_check, tool.input_schema,
                                  tool.where + ": tool " + tool.name + ".inputSchema");
    if (!schema) return schema.error();
    stage->schemas_[tool.name] = *schema;
  }
  return stage;
}

namespace {

// Why the body's optional "reason" (the agent's words to the approvers) is refused, or none.
std::optional<std::string> reason_problem(const nlohmann::json& body) {
  const auto it = body.find("reason");
  if (it == body.end()) return std::nullopt;
  if (!it->is_string()) return "reason must be a string (the agent's reason for the call, shown to approvers)";
  if (it->get_ref<const std::string&>().size() > kMaxReasonBytes)
    return "reason is " + std::to_string(it->get_ref<const std::string&>().size()) + " bytes; at most " +
           std::to_string(kMaxReasonBytes) + " are accepted";
  return std::nullopt;
}

}  // namespace

StageResult CheckInputStage::run(Invocation& inv, StageContext&) {
  auto schema = schemas_.find(inv.tool_name);
  if (schema == schemas_.end())
    return deny(ErrorKind::unknown_tool, "there is no tool named '" + inv.tool_name + "'");
  // The body: {"arguments": {...}} and nothing else, nested no deeper than the limit (all
  // that follows walks it recursively).
  auto parsed = parse_json_bounded(inv.raw_body, max_depth_);
  if (!parsed && parsed.error().code == "too_deep")
    return deny(ErrorKind::invalid_input,
                "the request body: " + parsed.error().message + " (server.maxJsonDepth)");
  if (!parsed) return deny(ErrorKind::invalid_input, "the request body is not valid JSON");
  nlohmann::json body = std::move(*parsed);
  if (!body.is_object() || !body.contains("arguments"))
    return deny(ErrorKind::invalid_input, "the request body must be {\"arguments\": {...}}", "/arguments");
  for (const auto& [key, value] : body.items())
    if (key != "arguments" && key != "reason")
      return deny(ErrorKind::invalid_input, "unknown field '" + key + "' in the request body", "/" + key);
  if (auto problem = reason_problem(body)) return deny(ErrorKind::invalid_input, *problem, "/reason");
  if (body.contains("reason")) inv.reason = body["reason"].get<std::string>();
  inv.arguments = std::move(body["arguments"]);  // a 1 MiB argument is not copied
  if (!inv.arguments.is_object())
    return deny(ErrorKind::invalid_input, "arguments must be a JSON object", "/arguments");
  if (auto problem = schema->second->check(inv.arguments))
    return deny(ErrorKind::invalid_input, "arguments" + problem->first + ": " + problem->second,
                "/arguments" + (problem->first == "/" ? std::string() : problem->first));
  return StageResult::next();
}

}  // namespace airlock::pipeline
