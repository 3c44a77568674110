// The sealed columns of an approval (approval_store.hpp), shared by the SQLite and PostgreSQL
// stores: each sealed with the secret store's key, its associated data naming the approval
// and the column, so a value copied into another row, or another column, does not open.
#include "common/utf8_truncate.hpp"
#include "creds/sealing_key.hpp"
#include "server/approvals/approval_store.hpp"
#include "server/approvals/approvals.hpp"

namespace airlock::server::detail {
namespace {

std::string associated(const std::string& id, const char* column) { return "approval " + id + " " + column; }

std::string dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

void record_failure(ApprovalRecord& r, const Error& e) {
  if (!r.sealed_error.empty()) return;  // the first says why
  r.sealed_error = e.code;
  r.sealed_error_message = e.message;
}

// A column in plain (what an older daemon wrote is sealed when the store opens) is refused:
// a row rewritten in plain would otherwise pass for one sealed here.
Result<std::string> open_column(const creds::SealingKey& key, const std::string& id, const char* column,
                                const std::string& text) {
  if (!creds::SealingKey::is_sealed_text(text))
    return Error::make("sealed_corrupt", "approval " + id + ": its " + column + " is not sealed");
  return key.open_text(associated(id, column), text);
}

}  // namespace

Result<SealedColumns> seal_columns(const creds::SealingKey& key, const ApprovalRecord& r) {
  std::string arguments;
  if (r.invocation.is_object() && r.invocation.contains("arguments")) arguments = dump(r.invocation["arguments"]);
  SealedColumns out;
  out.arguments_bytes = static_cast<std::int64_t>(arguments.size());
  auto invocation = key.seal_text(associated(r.id, "invocation"), dump(r.invocation));
  auto preview = key.seal_text(associated(r.id, "arguments_preview"), truncate_utf8(arguments, kArgumentsPreviewBytes));
  if (!invocation) return invocation.error();
  if (!preview) return preview.error();
  out.invocation = std::move(*invocation);
  out.arguments_preview = std::move(*preview);
  if (!r.user_token.empty()) {
    auto token = key.seal_text(associated(r.id, "user_token"), r.user_token);
    if (!token) return token.error();
    out.user_token = std::move(*token);
  }
  return out;
}

void open_columns(const creds::SealingKey& key, ApprovalRecord& r, const std::string& invocation,
                  const std::string& preview, const std::string& user_token, bool with_invocation) {
  if (auto p = open_column(key, r.id, "arguments_preview", preview)) r.arguments_preview = std::move(*p);
  else record_failure(r, p.error());
  if (!with_invocation) return;
  if (auto doc = open_column(key, r.id, "invocation", invocation)) {
    r.invocation = nlohmann::json::parse(*doc, nullptr, false);
  } else {
    r.invocation = nullptr;
    record_failure(r, doc.error());
  }
  if (user_token.empty()) return;
  if (auto token = open_column(key, r.id, "user_token", user_token)) r.user_token = std::move(*token);
  else record_failure(r, token.error());
}

}  // namespace airlock::server::detail
