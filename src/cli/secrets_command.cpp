// airlock secrets set NAME --config FILE     (the value on stdin)
// airlock secrets list --config FILE [--json]
// airlock secrets rm NAME --config FILE
// Airlock's encrypted secret store in the configuration's data directory (docs/credentials.md).
// A value is only ever read from stdin, never from an argument, which every user of the
// machine can read in /proc. It works while the daemon runs: the store takes no lock of the
// data directory, and the daemon reads each secret afresh. Exit 0 done, 1 the store refused
// or failed (no such secret, an insecure key file), 2 usage or configuration error.
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.hpp"
#include "common/utc_time.hpp"
#include "creds/secret_store.hpp"
#include "policy/config.hpp"
#include "policy/names.hpp"

namespace airlock::cli {
namespace {

// The store's limit, and one more byte for the newline `echo` adds: reading stops there, so
// a larger input is refused by the store without being read whole.
constexpr std::size_t kMaxInput = 64 * 1024 + 2;

struct SecretsOptions {
  std::string config_file;
  std::string name;
  bool json = false;
  std::size_t extra_arguments = 0;  // set: what CLI11 did not parse, perhaps a value
};

// A buffer for the value, wiped when it goes away.
struct Plaintext {
  std::string bytes;
  ~Plaintext() { ::explicit_bzero(bytes.data(), bytes.size()); }
};

// Echo off for as long as this lives.
class NoEcho {
 public:
  explicit NoEcho(int fd) : fd_(fd) {
    if (::tcgetattr(fd_, &saved_) != 0) return;
    termios quiet = saved_;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    active_ = ::tcsetattr(fd_, TCSAFLUSH, &quiet) == 0;
  }
  ~NoEcho() {
    if (active_) ::tcsetattr(fd_, TCSAFLUSH, &saved_);
  }
  NoEcho(const NoEcho&) = delete;
  NoEcho& operator=(const NoEcho&) = delete;

 private:
  int fd_;
  termios saved_{};
  bool active_ = false;
};

// Up to kMaxInput bytes of stdin, or one line of it when it is a terminal (typed unechoed).
void read_value(const std::string& name, Plaintext& out) {
  const bool tty = ::isatty(STDIN_FILENO) == 1;
  std::optional<NoEcho> quiet;
  if (tty) {
    // Echo off before the prompt: what is typed once it shows is neither echoed nor flushed
    // away by TCSAFLUSH.
    quiet.emplace(STDIN_FILENO);
    std::cerr << "Value of secret " << name << " (not echoed): " << std::flush;
  }
  out.bytes.resize(kMaxInput);
  std::size_t size = 0;
  while (size < kMaxInput) {
    ssize_t n = ::read(STDIN_FILENO, out.bytes.data() + size, tty ? 1 : kMaxInput - size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      throw UsageError{std::string("reading the value from stdin: ") + std::strerror(errno)};
    if (n == 0) break;
    size += static_cast<std::size_t>(n);
    if (tty && out.bytes[size - 1] == '\n') break;
  }
  if (tty) std::cerr << "\n";
  out.bytes.resize(size);
  // Exactly one: `echo VALUE |` works, and a value that ends in newlines keeps the others.
  if (!out.bytes.empty() && out.bytes.back() == '\n') out.bytes.pop_back();
  if (out.bytes.empty())
    throw UsageError{
        "the value is empty: give it on stdin (printf %s \"$VALUE\" | airlock secrets set " + name +
        " --config FILE)"};
}

void check_name(const std::string& name) {
  if (!policy::valid_tool_name(name))
    throw UsageError{"'" + name + "' is not a valid secret name: " + policy::kToolNameRule};
}

std::unique_ptr<creds::SecretStore> open_store(const SecretsOptions& o) {
  auto config = policy::load_config(o.config_file);
  if (!config) throw UsageError{config.error().message};
  auto store = creds::SecretStore::open(config->storage.data_dir);
  if (!store) throw store.error();
  return std::move(*store);
}

int set_command(const SecretsOptions& o) {
  if (o.extra_arguments > 0)
    throw UsageError{std::to_string(o.extra_arguments) +
                     " unexpected argument(s), not shown: the value is " +
                     "read from stdin, never from an argument"};
  check_name(o.name);
  auto store = open_store(o);  // before the value is typed: a bad configuration says so first
  Plaintext value;
  read_value(o.name, value);
  if (auto s = store->set(o.name, value.bytes); !s) throw s.error();
  std::cout << "secret " << o.name << " set\n";
  return 0;
}

int list_command(const SecretsOptions& o) {
  auto entries = open_store(o)->list();
  if (!entries) throw entries.error();
  if (o.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& e : *entries)
      out.push_back(
          {{"name", e.name}, {"updated", rfc3339_seconds(e.updated_ms / 1000)}, {"updated_ms", e.updated_ms}});
    std::cout << nlohmann::json{{"secrets", out}}.dump(2) << "\n";
    return 0;
  }
  if (entries->empty()) std::cerr << "no secrets (airlock secrets set NAME --config FILE)\n";
  for (const auto& e : *entries) std::cout << e.name << "  " << rfc3339_seconds(e.updated_ms / 1000) << "\n";
  return 0;
}

int rm_command(const SecretsOptions& o) {
  check_name(o.name);
  if (auto s = open_store(o)->remove(o.name); !s) throw s.error();
  std::cout << "secret " << o.name << " removed\n";
  return 0;
}

// Runs one of the commands: usage errors exit 2, the store's errors 1.
int run(const char* what, int (*command)(const SecretsOptions&), const SecretsOptions& o) {
  try {
    return command(o);
  } catch (const UsageError& e) {
    std::cerr << "airlock secrets " << what << ": " << e.message << "\n";
    return 2;
  } catch (const Error& e) {
    std::cerr << "airlock secrets " << what << ": " << e.code << ": " << e.message << "\n";
    return e.code == "invalid_argument" ? 2 : 1;  // a value too large is a usage error too
  }
}

}  // namespace

void add_secrets_command(CLI::App& app, ExitStatus& status) {
  auto* secrets = app.add_subcommand(kSecretsCommand.name, kSecretsCommand.summary);
  secrets->require_subcommand(1);
  auto opts = std::make_shared<SecretsOptions>();
  auto add = [&](const char* name, const char* summary, int (*command)(const SecretsOptions&)) {
    auto* sub = secrets->add_subcommand(name, summary);
    sub->add_option("--config", opts->config_file,
                    "The daemon's configuration file (its storage.dataDir)")
        ->required();
    sub->callback([sub, opts, &status, name, command] {
      opts->extra_arguments = sub->remaining_size();
      status.code = run(name, command, *opts);
    });
    return sub;
  };
  auto* set =
      add("set", "Set a secret to the value read from stdin (one line, unechoed, from a terminal)",
          set_command);
  set->add_option("name", opts->name, "The secret's name")->required();
  // A value given as an argument anyway is refused here, unechoed: CLI11's "not expected"
  // error would print it.
  set->allow_extras();
  add("list", "List the secrets' names and when each was set (never their values)", list_command)
      ->add_flag("--json", opts->json, "Print them as JSON");
  add("rm", "Remove a secret", rm_command)
      ->add_option("name", opts->name, "The secret's name")
      ->required();
}

}  // namespace airlock::cli
