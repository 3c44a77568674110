// The files of a session (docs/sessions.md): PUT, GET and DELETE
// /v1/sessions/{id}/files/{path}, for the session's owner. Paths are resolved by the session's
// init inside the sandbox, beneath its work dir (sandbox/session/session_init_files.cpp); an
// upload is streamed into the session (never held whole) and stops at its disk limit, and
// committed only once complete (a new name, then a rename over the old file); downloads and
// uploads pass through DLP as they stream; each one is an airlock.session/v1 record.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

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
// A workspace path as a caller gave it (not percent-encoded), normalized the same way.
Result<FileTarget> workspace_target(const std::string& path);

// Serves one files request on `session` (already found for its owner). Blocks: run it on a
// task of its own.
void serve_files(SessionService& sessions, std::shared_ptr<LiveSession> session,
                 std::shared_ptr<const Generation> generation, const HttpRequest& r,
                 const std::function<void(HttpResponse)>& reply);

// The same without HTTP (the MCP server's session tools), each for the session's owner: the
// same DLP, disk limit, commit by rename and record as PUT and GET. Block.
// Writes `content` at `target` (a directory when it ends in '/'): {path, type, size, sha256?,
// redactions}.
Result<nlohmann::json> write_session_file(SessionService& sessions, LiveSession& session, const Generation& generation,
                                          const FileTarget& target, std::string content);
// Reads a file whole, as DLP passes it (file_too_large past `max_bytes`: nothing is answered),
// or lists a directory ({path, type: directory, entries}).
struct FileRead {
  std::optional<nlohmann::json> listing;  // a directory
  std::string bytes;                      // a file
  std::vector<std::string> redactions;    // the detectors that took something out of it
};
Result<FileRead> read_session_file(SessionService& sessions, LiveSession& session, const Generation& generation,
                                   const std::string& path, std::size_t max_bytes);

}  // namespace airlock::server
