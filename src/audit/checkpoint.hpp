// Signed checkpoints: {origin, size, root, time} in canonical JSON, signed with Ed25519.
//
//   body      = {"origin":"...","root":"<hex>","size":N,"time":<ms since the Unix epoch>}
//   signature = Ed25519(key, "airlock-audit-checkpoint/v1\n" || body)
//
// The context line keeps a checkpoint signature from ever being mistaken for a signature over
// anything else. The envelope (checkpoint_envelope) is what `airlock audit checkpoint` prints,
// `prove` embeds and `verify --trusted` reads back.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "audit/hash.hpp"
#include "audit/signing_key.hpp"
#include "common/result.hpp"

namespace airlock::audit {

inline constexpr std::string_view kCheckpointSignatureContext = "airlock-audit-checkpoint/v1\n";

struct Checkpoint {
  std::string origin;
  std::uint64_t size = 0;
  Hash root{};
  std::int64_t time_ms = 0;
  bool operator==(const Checkpoint&) const = default;
};

std::string checkpoint_body(const Checkpoint& checkpoint);
// Strict: the body must be exactly the canonical text of a checkpoint (no extra members).
Result<Checkpoint> parse_checkpoint_body(std::string_view body);

struct SignedCheckpoint {
  Checkpoint checkpoint;
  std::string body;  // the exact bytes signed, after the context line
  Signature signature{};
};

Result<SignedCheckpoint> sign_checkpoint(const Checkpoint& checkpoint, const SigningKey& key);
// Error code "bad_signature" when the signature does not hold under `key`.
Status verify_checkpoint_signature(const SignedCheckpoint& checkpoint, const PublicKey& key);

// {"checkpoint":{...},"key_id":"...","public_key":"<hex>","signature":"<hex>"}
nlohmann::json checkpoint_envelope(const SignedCheckpoint& checkpoint, const PublicKey& key);

// A checkpoint read back from an envelope, with the key it names; the signature is checked.
struct CheckpointWithKey {
  SignedCheckpoint signed_checkpoint;
  PublicKey key;
};
Result<CheckpointWithKey> parse_checkpoint_envelope(const nlohmann::json& envelope);

}  // namespace airlock::audit
