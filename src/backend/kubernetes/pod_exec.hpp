// A command run in a pod through the API server's pods/exec subresource: a WebSocket whose
// subprotocol is v5.channel.k8s.io, or v4.channel.k8s.io where the server does not speak v5.
// Each binary message starts with its channel: 0 stdin, 1 stdout, 2 stderr, 3 the exec's
// end (a v1 Status: Success, or NonZeroExitCode with the code in details.causes ExitCode),
// 4 a terminal's resize ({"Width","Height"}); v5 adds 255 CHANNEL, which closes a channel
// (stdin's EOF; v4 cannot say it: a v4 exec's stdin ends only with the connection).
// The connection is KubeClient's (its TLS context, certificate checks and credentials).
// The caller gets pipes (or, for a terminal, a local pseudo-terminal's master, whose window
// size is passed on as it changes), pumped by a thread of the exec's own.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/kubernetes/kube_client.hpp"
#include "common/result.hpp"
#include "common/unique_fd.hpp"
#include "sandbox/session/session.hpp"

namespace airlock::backend::kubernetes {

inline constexpr const char* kExecProtocolV5 = "v5.channel.k8s.io";
inline constexpr const char* kExecProtocolV4 = "v4.channel.k8s.io";

struct PodExecRequest {
  std::string namespace_name, pod, container = "tool";
  std::vector<std::string> command;
  bool stdin = true;
  // A terminal (tty=true; stderr comes on stdout, as on any terminal) of this initial size.
  std::optional<sandbox::WindowSize> terminal;
  // Offered in this order; a server that refuses them all with an error before the upgrade
  // is asked again with v4 alone.
  std::vector<std::string> protocols = {kExecProtocolV5, kExecProtocolV4};
};

// How the exec ended, from the status channel.
struct PodExecEnd {
  bool has_code = false;  // false: the Status named no exit code (the command could not start, the connection broke)
  int code = 0;
  std::string message;    // the Status's message when it is not Success
};

class PodExec {
 public:
  // Connects, upgrades and starts pumping. An error ("kubernetes") when the upgrade fails
  // (the server's Status message when it sent one).
  static Result<std::unique_ptr<PodExec>> start(KubeClient& client, const PodExecRequest& request);
  ~PodExec();  // hangs up and joins the pump
  PodExec(const PodExec&) = delete;
  PodExec& operator=(const PodExec&) = delete;

  // The caller's ends, once each: the write end of stdin, the read ends of stdout and stderr;
  // for a terminal only take_terminal() (its master: write input, read output, TIOCSWINSZ).
  UniqueFd take_stdin();
  UniqueFd take_stdout();
  UniqueFd take_stderr();
  UniqueFd take_terminal();
  const std::string& protocol() const;  // the subprotocol the server chose

  // The exec's end once the server has said it (or the connection has ended), waiting at
  // most `timeout`.
  std::optional<PodExecEnd> wait(std::chrono::milliseconds timeout);
  void hang_up();  // closes the connection (the command in the pod is not killed by it)

  struct State;

 private:
  explicit PodExec(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

// The exec's end from the status channel's v1 Status JSON.
PodExecEnd parse_exec_status(const std::string& json_text);

}  // namespace airlock::backend::kubernetes
