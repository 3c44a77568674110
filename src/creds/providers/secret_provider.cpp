#include "creds/providers/secret_provider.hpp"

#include "creds/secret_store.hpp"

namespace airlock::creds {
namespace {

Result<std::string> secret_name(const policy::CredentialSpec& spec) {
  const auto* secret = std::get_if<policy::SecretCredential>(&spec.source);
  if (secret == nullptr)
    return Error::make("invalid_argument", "credential " + spec.env + " (" + spec.where +
                                               ") is not a secret credential");
  return secret->name;
}

// What the tool's caller may read: the secret's name and what went wrong, never a value.
Error unavailable(const std::string& name, const Error& why) {
  if (why.code == "unknown_secret")
    return Error::make(
        "credential_unavailable",
        "secret '" + name + "' is not set (set it with: airlock secrets set " + name + ")");
  return Error::make("credential_unavailable",
                     "secret '" + name + "': " + why.code + ": " + why.message);
}

}  // namespace

SecretProvider::Lookup SecretProvider::lookup_in(std::shared_ptr<const SecretStore> store) {
  return [store = std::move(store)](const std::string& name) { return store->get(name); };
}

Result<nlohmann::json> SecretProvider::target(const policy::CredentialSpec& spec,
                                              const Lease&) const {
  auto name = secret_name(spec);
  if (!name) return name.error();
  return nlohmann::json{{"secret", *name}};
}

Result<Issued> SecretProvider::issue(const policy::CredentialSpec& spec, const Lease&,
                                     const LeaseContext& context) {
  auto name = secret_name(spec);
  if (!name) return name.error();
  auto value = lookup_(*name);
  if (!value) return unavailable(*name, value.error());
  if (value->empty())
    return unavailable(*name, Error::make("secret_corrupt", "the value is empty"));
  return Issued{std::move(*value), {"secret:" + *name}, context.now + context.max_ttl};
}

Status SecretProvider::revoke(const Lease&, const std::string*) {
  return {};
}

}  // namespace airlock::creds
