// webhooks: where Airlock POSTs its events, signed with HMAC-SHA256 (docs/webhooks.md,
// docs/config.md). Read in config_webhooks.cpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::policy {

inline constexpr const char* kEventApprovalRequested = "approval.requested";
inline constexpr const char* kEventInvocationCompleted = "invocation.completed";
// A secret shorter than this is a configuration error (it would be guessable).
inline constexpr std::size_t kMinWebhookSecretBytes = 16;
inline constexpr std::chrono::milliseconds kMaxWebhookTimeout{60'000};

// How a failed delivery is tried again: after `initial`, doubling each time up to `max`,
// until `attempts` were made (0: no limit) or `give_up_after` passed since the event.
struct WebhookRetry {
  std::chrono::milliseconds initial{1000};
  std::chrono::milliseconds max{5 * 60 * 1000};
  std::chrono::milliseconds give_up_after{24LL * 3600 * 1000};
  std::uint32_t attempts = 0;
  bool operator==(const WebhookRetry&) const = default;
};

struct WebhookConfig {
  std::string name;
  std::string url;                  // https://..., or http:// to a loopback address
  std::string secret;               // the key of the HMAC, read when the config is loaded
  std::string secret_source;        // "env FOO" or "file /path": for messages, never the value
  std::vector<std::string> events;  // kEventApprovalRequested, kEventInvocationCompleted
  std::vector<std::string> tools;   // names or globs; empty: every tool
  std::chrono::milliseconds timeout{10'000};  // for one attempt, connect to answer
  WebhookRetry retry;
  std::string where;                // "file:line" of its definition

  bool wants(std::string_view event) const;
  bool covers(std::string_view tool) const;  // `tools` empty, or one of them matches
};

}  // namespace airlock::policy
