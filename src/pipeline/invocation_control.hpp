// Live controls of a running invocation, set by the transport that carries it (MCP): its
// cancellation and where its progress goes. Not part of what is persisted or recorded.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/cancel_signal.hpp"

namespace airlock::pipeline {

struct Progress {
  double progress = 0;             // increases with each report
  std::optional<double> total;
  std::string message;             // "check_input", "execute", or the tool's own words
};

struct InvocationControl {
  // Cancelled: the pipeline ends the invocation with ErrorKind::cancelled before its next
  // stage, and the execute stage stops the run (the sandbox, the MCP server's call).
  CancelSignal cancel;
  // Called from the invocation's worker: before each stage, and as an MCP server reports.
  std::function<void(const Progress&)> progress;
};

}  // namespace airlock::pipeline
