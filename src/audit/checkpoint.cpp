#include "audit/checkpoint.hpp"

#include <nlohmann/json.hpp>

#include "audit/canonical_json.hpp"

namespace airlock::audit {
namespace {

Error malformed(const std::string& message) {
  return Error::make("malformed_checkpoint", message);
}

std::string signed_message(std::string_view body) {
  std::string message(kCheckpointSignatureContext);
  message += body;
  return message;
}

}  // namespace

std::string checkpoint_body(const Checkpoint& checkpoint) {
  std::string origin;
  append_canonical_string(checkpoint.origin, origin);
  return canonical_object({{"origin", std::move(origin)},
                           {"root", quoted_hex(checkpoint.root)},
                           {"size", std::to_string(checkpoint.size)},
                           {"time", std::to_string(checkpoint.time_ms)}});
}

Result<Checkpoint> parse_checkpoint_body(std::string_view body) {
  auto json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object() || json.size() != 4 || !json.contains("origin") ||
      !json["origin"].is_string() || !json.contains("root") || !json["root"].is_string() ||
      !json.contains("size") || !json["size"].is_number_unsigned() || !json.contains("time") ||
      !json["time"].is_number_integer())
    return malformed("a checkpoint is {origin, root, size, time}; got " +
                     std::string(body.substr(0, 200)));
  auto root = hash_from_hex(json["root"].get<std::string>());
  if (!root) return malformed("checkpoint root is not 32 bytes of hex");
  Checkpoint checkpoint{json["origin"].get<std::string>(), json["size"].get<std::uint64_t>(),
                        *root, json["time"].get<std::int64_t>()};
  if (checkpoint_body(checkpoint) != body) return malformed("checkpoint body is not canonical");
  return checkpoint;
}

Result<SignedCheckpoint> sign_checkpoint(const Checkpoint& checkpoint, const SigningKey& key) {
  SignedCheckpoint out{checkpoint, checkpoint_body(checkpoint), {}};
  auto signature = key.sign(as_bytes(signed_message(out.body)));
  if (!signature) return signature.error();
  out.signature = *signature;
  return out;
}

Status verify_checkpoint_signature(const SignedCheckpoint& checkpoint, const PublicKey& key) {
  return verify_signature(key, as_bytes(signed_message(checkpoint.body)),
                          ByteView(checkpoint.signature));
}

nlohmann::json checkpoint_envelope(const SignedCheckpoint& checkpoint, const PublicKey& key) {
  return {{"checkpoint", nlohmann::json::parse(checkpoint.body)},
          {"key_id", key.key_id()},
          {"public_key", key.hex()},
          {"signature", to_hex(ByteView(checkpoint.signature))}};
}

Result<CheckpointWithKey> parse_checkpoint_envelope(const nlohmann::json& envelope) {
  if (!envelope.is_object() || !envelope.contains("checkpoint") ||
      !envelope.contains("public_key") || !envelope.contains("signature") ||
      !envelope["public_key"].is_string() || !envelope["signature"].is_string())
    return malformed("a checkpoint envelope has checkpoint, public_key and signature");
  auto body = canonical_json(envelope["checkpoint"]);
  if (!body) return malformed("checkpoint: " + body.error().message);
  auto checkpoint = parse_checkpoint_body(*body);
  if (!checkpoint) return checkpoint.error();
  auto key = PublicKey::from_hex(envelope["public_key"].get<std::string>());
  if (!key) return malformed("public_key is not 32 bytes of hex");
  auto signature_bytes = from_hex(envelope["signature"].get<std::string>());
  if (!signature_bytes || signature_bytes->size() != kSignatureSize)
    return malformed("signature is not 64 bytes of hex");
  SignedCheckpoint signed_checkpoint{*checkpoint, *body, {}};
  std::copy(signature_bytes->begin(), signature_bytes->end(),
            reinterpret_cast<char*>(signed_checkpoint.signature.data()));
  if (auto status = verify_checkpoint_signature(signed_checkpoint, *key); !status)
    return status.error();
  return CheckpointWithKey{std::move(signed_checkpoint), *key};
}

}  // namespace airlock::audit
