// The record of a session's life (docs/sessions.md, docs/audit.md "Session records"): one per
// event (created, paused, resumed, snapshotted, ended; a file written, read or removed through the files
// API; a terminal opened and closed; its credentials renewed, revoked, or failed), beside the
// invocation record of each exec in it, which names the session.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "audit/invocation_record.hpp"

namespace airlock::audit {

inline constexpr const char* kSessionSchema = "airlock.session/v1";

// What a file event did (file_written, file_read, file_removed).
struct SessionFileRecord {
  std::string path;     // in the workspace
  std::string outcome;  // "ok", or the error's code (dlp_blocked, disk_limit, ...)
  std::uint64_t bytes = 0;               // written or sent
  std::string sha256;                    // of what was written or sent (files), hex
  std::vector<std::string> redactions;   // the DLP detectors that redacted (or blocked) it
};

// A snapshot of the session's workspace: the one taken (snapshotted), or the one a session
// started from (created).
struct SessionSnapshotRecord {
  std::string id;
  std::uint64_t bytes = 0;
  std::string sha256;  // of the archive, hex
};

// A terminal on the session (terminal_opened; terminal_closed adds how it ended). What was typed
// and shown is recorded by its size and SHA-256, never its text (a password typed at a prompt).
struct SessionTerminalRecord {
  std::string id;                    // the terminal's, in both records
  std::vector<std::string> command;  // as it ran
  std::uint64_t rows = 0, columns = 0;
  // terminal_closed:
  std::string verdict;  // ok, exit_nonzero, signaled, client_gone, dlp_blocked, session_ended
  std::optional<int> exit_code;
  std::string signal;  // the signal that ended it, when one did
  std::uint64_t input_bytes = 0, output_bytes = 0;
  std::string input_sha256, output_sha256;  // hex, of the bytes typed and of the bytes shown (before DLP)
  std::vector<std::string> redactions;      // the DLP detectors that redacted (or blocked) output
  std::uint64_t wall_ms = 0;
};

// A credential lease of the session that ended (credentials_revoked, credentials_failed,
// ended): never its value.
struct SessionLeaseEnd {
  std::string lease_id;
  std::string name;      // the variable it was given as
  std::string provider;  // "token", "postgres", "secret"
  std::string state;     // "revoked", or "revoke_failed" (its provider could not end it)
};

struct SessionRecord {
  std::string session_id;
  std::string event;  // "created", "ended"
  std::string template_name;
  std::string principal;                 // "" for a user without an agent
  std::optional<SubjectRecord> subject;  // absent when the session is no user's
  std::string access_rule;               // created: what allowed it
  std::map<std::string, std::uint64_t> limits;  // created: memory_bytes, idle_timeout_ms, ...
  // ended: why ("deleted", "idle_timeout", "max_lifetime", "access_revoked",
  // "template_removed", "shutdown", "aborted", or the sandbox's verdict when a limit ended it)
  std::string reason;
  std::string message;                          // ended: a sentence for a human
  std::map<std::string, std::uint64_t> usage;   // ended: execs, cpu_user_ms, cpu_sys_ms, memory_peak_bytes
  std::vector<EgressDecision> egress;           // ended: every connection the session attempted
  std::optional<SessionFileRecord> file;        // file_written, file_read, file_removed
  std::optional<SessionSnapshotRecord> snapshot;  // snapshotted; created from a snapshot
  std::optional<SessionTerminalRecord> terminal;  // terminal_opened, terminal_closed
  // created, credentials_renewed: the leases issued (an HMAC of each value, never the value)
  std::vector<CredentialUse> credentials;
  // credentials_revoked, credentials_failed, ended: the leases ended since the last record
  std::vector<SessionLeaseEnd> credentials_revoked;
};

nlohmann::json to_fields(const SessionRecord& record);

}  // namespace airlock::audit
