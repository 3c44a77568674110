// The invocation pipeline: a chain of stages with one interface (think of Envoy's filter
// chain). A new layer is a new stage, not a new branch in a god function.
//
//   authenticate -> authorize -> check input -> validate code -> scan input -> tier ->
//   execute -> scan output -> (audit, always)
#pragma once

#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "pipeline/invocation.hpp"

namespace airlock::pipeline {

class Stage {
 public:
  virtual ~Stage() = default;
  virtual std::string_view name() const = 0;
  // Enriches the invocation, or ends it with a typed error.
  virtual std::optional<InvocationError> run(Invocation& inv) = 0;
};

// Observes stage timings (the daemon's metrics).
class StageObserver {
 public:
  virtual ~StageObserver() = default;
  virtual void stage_done(std::string_view stage, double ms, const Invocation& inv) = 0;
};

class Pipeline {
 public:
  void add(std::unique_ptr<Stage> stage) { stages_.push_back(std::move(stage)); }
  // The last stage, run for every invocation however it ended. If it fails, the invocation
  // fails (fail closed): an invocation without its audit record has no result.
  void set_final(std::unique_ptr<Stage> stage) { final_ = std::move(stage); }
  void set_observer(StageObserver* observer) { observer_ = observer; }

  void run(Invocation& inv) const;

 private:
  std::vector<std::unique_ptr<Stage>> stages_;
  std::unique_ptr<Stage> final_;
  StageObserver* observer_ = nullptr;
};

}  // namespace airlock::pipeline
