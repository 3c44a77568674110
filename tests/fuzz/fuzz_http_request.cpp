// libFuzzer: raw bytes as an HTTP/1.1 request through the server's parser and router
// (Beast's parser with the daemon's limits, then Api::handle). It must never crash or hang;
// every input gets an HTTP response. Invocations reach the pipeline's first stages (no tool
// here runs a sandbox).
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "audit/audit_log.hpp"
#include "pipeline/stages/access.hpp"
#include "pipeline/stages/check_input.hpp"
#include "server/api/api.hpp"
#include "server/http/http_server.hpp"
#include "server/invocations/invocation_store.hpp"

namespace {

using namespace airlock;

const char* kConfig = R"(apiVersion: airlock.dev/v1
kind: AirlockConfig
principals:
  - name: fuzz
    apiKeySha256: 2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae
    tools: ["*"]
tools:
  - name: echo
    runtime: {type: command, command: [/bin/cat]}
    inputSchema: {type: object, properties: {n: {type: integer}}}
  - name: risky
    risk: high
    runtime: {type: command, command: [/bin/cat]}
)";

struct Harness {
  server::GenerationSlot generation;
  server::InvocationExecutor executor{1, 4};
  std::unique_ptr<server::InvocationStore> store;
  std::unique_ptr<audit::AuditLog> audit;
  server::Metrics metrics;
  std::atomic<bool> draining{false};
  std::unique_ptr<server::Api> api;

  Harness() {
    auto dir = std::filesystem::temp_directory_path() / ("airlock-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    auto gen = std::make_shared<server::Generation>();
    gen->config = std::make_shared<const policy::Config>(*policy::parse_config(kConfig, "fuzz.yaml", dir.string()));
    gen->authenticator = *pipeline::Authenticator::create(gen->config, nullptr);
    auto p = std::make_unique<pipeline::Pipeline>(gen->config);
    p->add(std::make_unique<pipeline::AuthenticateStage>(gen->authenticator));
    p->add(std::make_unique<pipeline::AuthorizeStage>());
    p->add(std::move(*pipeline::CheckInputStage::create(*gen->config)));
    p->add(std::make_unique<pipeline::TierStage>());  // no execute stage
    gen->pipeline = std::move(p);
    generation.store(std::move(gen));
    store = std::move(*server::InvocationStore::open((dir / "state.db").string()));
    audit = std::move(*audit::AuditLog::open((dir / "audit.db").string()));
    server::ApiServices s;
    s.generation = &generation;
    s.executor = &executor;
    s.store = store.get();
    s.audit = audit.get();
    s.metrics = &metrics;
    s.draining = &draining;
    s.new_id = [] {
      static std::uint64_t n = 0;
      return "fuzz-" + std::to_string(n++);
    };
    api = std::make_unique<server::Api>(s);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Harness harness;
  std::string response = server::handle_raw_request(*harness.api, std::string(reinterpret_cast<const char*>(data), size), 4096);
  if (response.rfind("HTTP/1.1 ", 0) != 0) __builtin_trap();  // every input gets an answer
  return 0;
}
