// Validator: source checks, the warm parse worker, module exports (cached), the rule engine.
#include <algorithm>
#include <map>
#include <mutex>
#include <sys/stat.h>

#include "validate/engine.hpp"
#include "validate/module_probe.hpp"
#include "validate/parse_worker.hpp"
#include "validate/source_checks.hpp"
#include "validate/validate.hpp"

#ifndef AIRLOCK_VALIDATE_PARSER_SCRIPT
#error "the build defines AIRLOCK_VALIDATE_PARSER_SCRIPT (the path of ast_dump.py)"
#endif
#ifndef AIRLOCK_VALIDATE_INSTALLED_PARSER_SCRIPT
#define AIRLOCK_VALIDATE_INSTALLED_PARSER_SCRIPT ""
#endif
// Builds without Python's headers (and sanitizer builds: the module cannot be loaded into an
// interpreter without the sanitizer runtime) have no C walk.
#ifndef AIRLOCK_VALIDATE_NATIVE_WALKER
#define AIRLOCK_VALIDATE_NATIVE_WALKER ""
#endif
#ifndef AIRLOCK_VALIDATE_INSTALLED_NATIVE_WALKER
#define AIRLOCK_VALIDATE_INSTALLED_NATIVE_WALKER ""
#endif

namespace airlock::validate {

std::string default_parser_script() {
  if (const char* env = std::getenv("AIRLOCK_VALIDATE_PARSER"); env && *env) return env;
  struct stat st {};
  std::string installed = AIRLOCK_VALIDATE_INSTALLED_PARSER_SCRIPT;
  if (!installed.empty() && ::stat(installed.c_str(), &st) == 0) return installed;
  return AIRLOCK_VALIDATE_PARSER_SCRIPT;
}

std::string default_native_walker() {
  struct stat st {};
  for (std::string path : {AIRLOCK_VALIDATE_INSTALLED_NATIVE_WALKER, AIRLOCK_VALIDATE_NATIVE_WALKER})
    if (!path.empty() && ::stat(path.c_str(), &st) == 0) return path;
  return "";
}

namespace {

// Findings from the tree carry byte columns (Python's col_offset); reports give characters.
void use_character_columns(std::vector<Finding>& findings, std::string_view source) {
  std::vector<std::size_t> line_starts = {0};
  for (std::size_t i = 0; i < source.size(); ++i)
    if (source[i] == '\n') line_starts.push_back(i + 1);
  for (auto& f : findings) {
    if (f.line <= 0 || f.col <= 1 || static_cast<std::size_t>(f.line) > line_starts.size()) continue;
    if (f.rule == "syntax-error" || f.rule == "source-nfkc-identifier") continue;  // already characters
    std::size_t start = line_starts[static_cast<std::size_t>(f.line) - 1];
    std::size_t end = std::min(source.size(), start + static_cast<std::size_t>(f.col) - 1);
    int characters = 0;
    for (std::size_t i = start; i < end; ++i)
      if ((static_cast<unsigned char>(source[i]) & 0xC0) != 0x80) ++characters;
    f.col = characters + 1;
  }
}

}  // namespace

class Validator::Impl {
 public:
  explicit Impl(ValidatorOptions options) : options_(std::move(options)) {
    if (options_.parser_script.empty()) options_.parser_script = default_parser_script();
    if (options_.native_walker.empty()) options_.native_walker = default_native_walker();
    else if (options_.native_walker == "none") options_.native_walker.clear();
  }

  ParseWorkerConfig config_for(const Policy& policy) const {
    ParseWorkerConfig config;
    config.interpreter = policy.interpreter;
    config.script = options_.parser_script;
    config.native_walker = options_.native_walker;
    config.request_timeout = options_.parse_timeout;
    config.lifetime = options_.worker_lifetime;
    config.memory_bytes = options_.worker_memory_bytes;
    return config;
  }

  ParseWorker& worker_for(const Policy& policy) {
    std::lock_guard lock(mutex_);
    auto& slot = workers_[policy.interpreter];
    if (!slot) slot = std::make_unique<ParseWorker>(config_for(policy));
    return *slot;
  }

  // The exports of `modules` for this interpreter, computed once per set.
  Result<std::shared_ptr<const ExportTable>> exports_for(const Policy& policy,
                                                         const std::set<std::string>& modules) {
    std::string key = policy.interpreter;
    for (const auto& m : modules) key += "\n" + m;
    {
      std::lock_guard lock(mutex_);
      auto it = exports_.find(key);
      if (it != exports_.end()) return it->second;
    }
    auto table = probe_module_exports(config_for(policy), modules);
    if (!table) return table.error();
    auto shared = std::make_shared<const ExportTable>(std::move(*table));
    std::lock_guard lock(mutex_);
    ++exports_computed_;
    exports_.emplace(key, shared);
    return shared;
  }

  Report check(std::string_view source, const Policy& policy) {
    std::vector<Finding> findings = check_source_bytes(source, policy);
    for (const auto& f : findings)
      if (f.rule == "source-too-large") return make_report(std::move(findings));
    auto parsed = worker_for(policy).parse(source);
    if (!parsed) {
      std::string rule = parsed.error().code == "parse_timeout" ? "parse-timeout" : "parse-failed";
      findings.push_back({rule, parsed.error().message, 0, 0, Severity::error});
      return make_report(std::move(findings));
    }
    Program program(*parsed, policy);
    std::shared_ptr<const ExportTable> exports = std::make_shared<const ExportTable>();
    if (parsed->reply.is_object() && parsed->reply.value("ok", false)) {
      auto table = exports_for(policy, program.modules_to_introspect());
      if (!table) {
        findings.push_back({"parse-failed", table.error().message, 0, 0, Severity::error});
        return make_report(std::move(findings));
      }
      exports = *table;
    }
    for (auto& f : program.analyze(*exports)) findings.push_back(std::move(f));
    use_character_columns(findings, source);
    return make_report(std::move(findings));
  }

  Status prepare(const Policy& policy) {
    Status started = worker_for(policy).start();
    if (!started.ok()) return started;
    auto table = exports_for(policy, modules_to_introspect(Json(), policy));
    if (!table) return table.error();
    return Status::success();
  }

  Stats stats() const {
    std::lock_guard lock(mutex_);
    Stats s;
    for (const auto& [interpreter, worker] : workers_) {
      s.worker_starts += worker->starts();
      s.parse_requests += worker->requests();
    }
    s.exports_computed = exports_computed_;
    return s;
  }

 private:
  ValidatorOptions options_;
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<ParseWorker>> workers_;
  std::map<std::string, std::shared_ptr<const ExportTable>> exports_;
  unsigned exports_computed_ = 0;
};

Validator::Validator(ValidatorOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Validator::~Validator() = default;

Report Validator::check(std::string_view source, const Policy& policy) {
  return impl_->check(source, policy);
}
Status Validator::prepare(const Policy& policy) { return impl_->prepare(policy); }
Validator::Stats Validator::stats() const { return impl_->stats(); }

Report check(std::string_view source, const Policy& policy) {
  static Validator validator;
  return validator.check(source, policy);
}

}  // namespace airlock::validate
