#include "backend/kubernetes/pod_outcome.hpp"

#include <csignal>

namespace airlock::backend::kubernetes {

using nlohmann::json;
using sandbox::Verdict;

namespace {

json terminated_state(const json& pod) {
  if (!pod.contains("status") || !pod["status"].contains("containerStatuses")) return json::object();
  for (const auto& status : pod["status"]["containerStatuses"])
    if (status.value("name", "") == "tool" && status.contains("state") && status["state"].contains("terminated"))
      return status["state"]["terminated"];
  return json::object();
}

void take_output(RunResult& result, const std::string& log, const std::string& termination_message,
                 std::uint64_t limit) {
  result.stdout_data = log.substr(0, limit);
  result.stdout_truncated = log.size() > limit;
  result.stderr_data = termination_message.substr(0, limit);
  if (result.stdout_truncated) {
    result.verdict = Verdict::output_limit;
    result.message = "the output passed its limit of " + std::to_string(limit) + " bytes";
  }
}

RunResult finished(const json& pod, const std::string& log, std::uint64_t limit) {
  RunResult result;
  json terminated = terminated_state(pod);
  std::string pod_reason = pod["status"].value("reason", "");
  std::string reason = terminated.value("reason", "");
  if (terminated.contains("exitCode")) result.exit_code = terminated["exitCode"].get<int>();
  if (pod_reason == "DeadlineExceeded") {
    result.verdict = Verdict::timeout;
    result.message = "the pod ran past its activeDeadlineSeconds and was stopped";
    result.exit_code.reset();
  } else if (reason == "OOMKilled") {
    result.verdict = Verdict::memory_limit;
    result.message = "the container passed its memory limit and was killed (OOMKilled)";
  } else if (!result.exit_code) {
    result.verdict = Verdict::setup_error;
    result.message = "the pod ended " + pod["status"].value("phase", "") + " without its container's exit code";
    return result;
  } else if (*result.exit_code == 0) {
    result.verdict = Verdict::ok;
    result.message = "exited 0";
  } else {
    result.verdict = Verdict::exit_nonzero;
    result.message = "exited " + std::to_string(*result.exit_code);
  }
  if (result.verdict == Verdict::ok || result.verdict == Verdict::exit_nonzero)
    take_output(result, log, terminated.value("message", ""), limit);
  else
    result.stdout_data = log.substr(0, limit);
  return result;
}

}  // namespace

RunResult setup_error(const std::string& message) {
  RunResult result;
  result.verdict = Verdict::setup_error;
  result.message = message;
  return result;
}

RunResult outcome_of(const PodEnd& end, const std::string& stdout_log, std::uint64_t output_limit) {
  switch (end.kind) {
    case PodEnd::Kind::finished:
      return finished(end.pod, stdout_log, output_limit);
    case PodEnd::Kind::overran: {
      RunResult result;
      result.verdict = Verdict::timeout;
      result.message = end.message;
      return result;
    }
    case PodEnd::Kind::cancelled: {
      RunResult result;
      result.verdict = Verdict::signaled;
      result.signal = SIGKILL;
      result.message = "the run was stopped (its pod deleted)";
      return result;
    }
    default:
      return setup_error(end.message);
  }
}

}  // namespace airlock::backend::kubernetes
