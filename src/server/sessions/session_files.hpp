// The files of a session (docs/sessions.md): PUT, GET and DELETE
// /v1/sessions/{id}/files/{path}, for the session's owner. Paths are resolved by the session's
// init inside the sandbox, beneath its work dir (sandbox/session/session_init_files.cpp); an
// upload is streamed into the session (never held whole) and stops at its disk limit, and
// committed only once complete (a new name, then a rename over the old file); downloads and
// uploads pass through DLP as they stream; each one is an airlock.session/v1 record.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/result.hpp"
#include "server/core/generation.hpp"
#include "server/http/http_message.hpp"
#include "server/sessions/session_service.hpp"

namespace airlock::server {

// Whether a request is a file upload, whose body the server streams to the handler
// (HttpServerOptions::streams_body): PUT /v1/sessions/{id}/files/{path}.
bool is_file_upload(std::string_view method, std::string_view target);

// The workspace path of a files request: what follows /v1/sessions/{id}/files in `target`,
// percent-decoded and normalized (sandbox::workspace_path; "" is the work dir), and whether it
// ended in '/' (PUT: a directory). invalid_path when it is not one.
struct FileTarget {
  std::string path;
  bool directory = false;
};
Result<FileTarget> file_target(std::string_view target);

// Serves one files request on `session` (already found for its owner). Blocks: run it on a
// task of its own.
void serve_files(SessionService& sessions, std::shared_ptr<LiveSession> session,
                 std::shared_ptr<const Generation> generation, const HttpRequest& r,
                 const std::function<void(HttpResponse)>& reply);

}  // namespace airlock::server
