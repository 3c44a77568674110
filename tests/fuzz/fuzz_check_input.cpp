// libFuzzer: arbitrary bytes as a request body through the check_input stage, against tool
// schemas like real ones (patterns, patternProperties, nested objects, $ref, formats). It must
// never crash, and every body is either accepted or refused with invalid_input.
#include <cstdint>
#include <string>

#include "pipeline/stages/check_input.hpp"
#include "server/core/invocation_response.hpp"

namespace {

using namespace airlock;

const char* kConfig = R"(apiVersion: airlock.dev/v1
kind: AirlockConfig
tools:
  - name: fetch
    runtime: {type: command, command: [/bin/cat]}
    inputSchema:
      type: object
      required: [url]
      additionalProperties: false
      definitions:
        header: {type: string, maxLength: 200, pattern: '^[\x20-\x7e]*$'}
      properties:
        url: {type: string, pattern: '^https?://[A-Za-z0-9.-]+(:[0-9]+)?(/.*)?$'}
        method: {enum: [GET, POST]}
        headers:
          type: object
          patternProperties: {'^[A-Za-z][A-Za-z0-9-]*$': {$ref: '#/definitions/header'}}
          additionalProperties: false
        since: {type: string, format: date-time}
  - name: query
    runtime: {type: command, command: [/bin/cat]}
    inputSchema:
      type: object
      properties:
        text: {type: string, pattern: '^[A-Za-z ]*$'}
        words: {type: array, items: {type: string, pattern: '^(a+)+$'}, maxItems: 50}
        filter:
          anyOf:
            - {type: object, properties: {day: {type: string, format: date}}}
            - {type: array, items: {$ref: '#/properties/filter'}}
        tree: {$ref: '#/definitions/node'}
      definitions:
        node:
          type: object
          properties:
            name: {type: string, pattern: '^[a-z]+$'}
            children: {type: array, items: {$ref: '#/definitions/node'}}
)";

struct Harness {
  policy::Config config;
  std::unique_ptr<pipeline::CheckInputStage> stage;
  Harness() {
    auto loaded = policy::parse_config(kConfig, "fuzz.yaml", "/nonexistent-base");
    if (!loaded) __builtin_trap();
    config = std::move(*loaded);
    auto created = pipeline::CheckInputStage::create(config);
    if (!created) __builtin_trap();
    stage = std::move(*created);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Harness harness;
  // The first byte picks the tool; the rest is the body.
  if (size == 0) return 0;
  const auto& tool = harness.config.tools[data[0] % harness.config.tools.size()];
  pipeline::Invocation inv;
  inv.tool_name = tool.name;
  inv.raw_body.assign(reinterpret_cast<const char*>(data) + 1, size - 1);
  pipeline::StageContext ctx(harness.config);
  auto result = harness.stage->run(inv, ctx);
  // Whatever the body, the answer is the call or a refusal of its input (a 400), never more.
  if (const auto* error = result.error();
      error && (error->kind != pipeline::ErrorKind::invalid_input || server::http_status(*error) != 400))
    __builtin_trap();
  return 0;
}
