// The invocation pipeline: a chain of stages with one interface (think of Envoy's filter
// chain). A new layer is a new stage, not a new branch in a god function. The stages, their
// order and the contract are in docs/pipeline.md; build_default.hpp composes the daemon's.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "pipeline/stage.hpp"

namespace airlock::dlp {
class Scanner;
}

namespace airlock::creds {
class Broker;
}

namespace airlock::pipeline {

// Observes stage timings (the daemon's metrics).
class StageObserver {
 public:
  virtual ~StageObserver() = default;
  virtual void stage_done(std::string_view stage, double ms, const Invocation& inv) = 0;
};

class Pipeline {
 public:
  // The stages run under `config`, which the pipeline keeps alive.
  explicit Pipeline(std::shared_ptr<const policy::Config> config);

  void add(std::unique_ptr<Stage> stage) { stages_.push_back(std::move(stage)); }
  // The last stage, run for every invocation when it ends, however it ended. If it fails, the
  // invocation fails (fail closed): an invocation without its audit record has no result.
  void set_final(std::unique_ptr<Stage> stage) { final_ = std::move(stage); }
  void set_observer(StageObserver* observer) { observer_ = observer; }

  const policy::Config& config() const { return *config_; }
  const std::shared_ptr<const policy::Config>& shared_config() const { return config_; }
  std::vector<std::string_view> stage_names() const;
  // The DLP policy's scanner its scan stages use (null: none), for what scans outside them
  // under the same policy (a session's exec output).
  void set_scanner(std::shared_ptr<const dlp::Scanner> scanner) { scanner_ = std::move(scanner); }
  const std::shared_ptr<const dlp::Scanner>& scanner() const { return scanner_; }
  // The credential broker its credentials stage leases with (null: none), for what leases
  // outside it under the same providers (a session's credentials).
  void set_credential_broker(std::shared_ptr<creds::Broker> broker) { broker_ = std::move(broker); }
  const std::shared_ptr<creds::Broker>& credential_broker() const { return broker_; }

  // Runs `inv` from its cursor until it ends or a stage suspends it. A suspended invocation
  // is resumed by calling run again (with this pipeline or one restored after a restart); if
  // the configuration changed what its decisions rested on meanwhile (its tool's definition,
  // tier, the access rules that let it through: pipeline/decision_basis.hpp) it ends with
  // config_changed, since what the earlier stages decided may no longer hold.
  void run(Invocation& inv) const;

 private:
  bool resume_allowed(Invocation& inv) const;
  std::string changed_basis(const Invocation& inv) const;
  void run_finalizers(Invocation& inv, StageContext& ctx) const;
  void run_final_stage(Invocation& inv, StageContext& ctx) const;
  static void end_with_reported_error(Invocation& inv);
  static void end_with_code_error(Invocation& inv);

  std::shared_ptr<const policy::Config> config_;
  std::vector<std::unique_ptr<Stage>> stages_;
  std::unique_ptr<Stage> final_;
  StageObserver* observer_ = nullptr;
  std::shared_ptr<const dlp::Scanner> scanner_;
  std::shared_ptr<creds::Broker> broker_;
};

}  // namespace airlock::pipeline
