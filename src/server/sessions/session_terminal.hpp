// A terminal on a session (docs/sessions.md, "Terminal"): GET /v1/sessions/{id}/terminal
// upgrades to a WebSocket carrying a shell on a pseudo-terminal of the session's own (its init
// opens the pty inside the sandbox; sandbox/session/session.hpp exec_on_terminal). For
// `airlock session shell` and the console.
//
//   client -> server   binary: keystrokes (^C is the byte 0x03: the pty's line discipline
//                              signals the foreground); text: {"type":"resize","rows":R,"cols":C}
//                              or {"type":"signal","signal":"INT"|"TERM"|"HUP"|"KILL"|"QUIT"}
//   server -> client   binary: what the terminal shows, through a DLP stream scan;
//                      text: {"type":"error","message"} for a control it refused, and last
//                              {"type":"exit","verdict","exit_code"|"signal","audit"}, then a
//                              close frame
//
// It is the owner's, like an exec: the quotas admit it (it holds a `concurrent` place while
// open; its CPU is charged to `cpuSeconds`), DLP scans its command and everything it shows,
// and two airlock.session/v1 records frame it (terminal_opened before the upgrade is answered,
// terminal_closed with its end, the sizes and SHA-256 of what was typed and shown).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "pipeline/quotas/quota_book.hpp"
#include "sandbox/session/session.hpp"
#include "server/core/generation.hpp"
#include "server/http/http_message.hpp"
#include "server/sessions/session_service.hpp"

namespace airlock::server {

struct TerminalRequest {
  std::vector<std::string> argv;  // ?command=<shell line>: /bin/sh -c line; else a login shell
  sandbox::WindowSize size;       // ?rows=&cols= (1-1000; 24x80 without them)
  std::string term = "xterm-256color";  // ?term=: its TERM
};

// The query of a terminal request; an error (invalid_input) names the parameter.
Result<TerminalRequest> parse_terminal_request(const std::string& target);

// Opens a terminal on `session` (found for its owner) for `r`, which must be a WebSocket
// upgrade (426 otherwise), answering through `reply`: an error before the upgrade, or the
// upgrade, after which the terminal runs on a task of the service until its shell ends, its
// client goes or the session ends.
void open_terminal(SessionService& sessions, std::shared_ptr<LiveSession> session,
                   std::shared_ptr<const Generation> generation, std::shared_ptr<pipeline::QuotaBook> quotas,
                   const HttpRequest& r, std::function<void(HttpResponse)> reply);

}  // namespace airlock::server
