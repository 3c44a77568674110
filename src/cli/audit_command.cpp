// airlock audit verify|show|prove|checkpoint|export|key: the tamper-evident audit log.
// Exit status: 0 good, 1 tampered (verify, or a proof that does not check), 2 error.
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "audit/audit_log.hpp"
#include "audit/canonical_json.hpp"
#include "audit/invocation_record.hpp"
#include "audit/log_reader.hpp"
#include "audit/verify.hpp"
#include "common/utc_time.hpp"
#include "policy/config.hpp"
#include "pipeline/storage_locations.hpp"
#include "cli/commands.hpp"

namespace airlock::cli {
namespace {

constexpr int kGood = 0;
constexpr int kTampered = 1;
constexpr int kError = 2;

int fail(const std::string& command, const std::string& message) {
  std::cerr << "airlock audit " << command << ": " << message << "\n";
  return kError;
}

// Which log: the positional path (a SQLite file), or the store `--config FILE` names
// (storage.postgres, else <dataDir>/audit.db), as the daemon configured with it appends there.
Result<audit::LogLocation> log_location(const std::string& path, const std::string& config_file) {
  if (path.empty() == config_file.empty())
    return Error::make("invalid_argument",
                       "give the log's path or --config FILE (the daemon's configuration), one of them");
  if (config_file.empty()) return audit::LogLocation::sqlite(path);
  auto config = policy::load_config(config_file);
  if (!config) return Error::make(config.error().code, "--config " + config_file + ": " + config.error().message);
  return pipeline::audit_log_location(config->storage);
}

// The public part of the log's key file, when this user can read it: verify then also checks
// that the key recorded in the log is still the one the file holds.
std::optional<audit::PublicKey> key_file_public_key(const audit::LogLocation& location) {
  if (location.signing_key_file().empty()) return std::nullopt;
  auto key = audit::SigningKey::load(location.signing_key_file());
  if (!key) return std::nullopt;
  return key->public_key();
}

Result<audit::CheckpointWithKey> read_trusted_checkpoint(const std::string& file) {
  std::ifstream in(file);
  if (!in) return Error::make("invalid_argument", "cannot read " + file);
  auto json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return Error::make("invalid_argument", file + " is not JSON");
  // Accept the output of `audit checkpoint` or a whole `audit prove` document.
  if (json.is_object() && json.contains("format") && json.contains("checkpoint"))
    json = json["checkpoint"];
  auto checkpoint = audit::parse_checkpoint_envelope(json);
  if (!checkpoint) return Error::make(checkpoint.error().code, file + ": " + checkpoint.error().message);
  return checkpoint;
}

void print_verify_report(const audit::VerifyReport& report, const std::string& path) {
  if (report.intact()) {
    std::cout << "ok: " << path << ": " << report.records << " records, " << report.checkpoints
              << " checkpoints; the latest valid checkpoint covers " << report.signed_size
              << " records\n";
    std::cout << "root " << audit::to_hex(report.root) << "\n";
  } else {
    std::cout << "TAMPERED: " << path << ": " << audit::describe(report.findings.front()) << "\n";
    for (std::size_t i = 1; i < report.findings.size(); ++i)
      std::cout << "  also: " << audit::describe(report.findings[i]) << "\n";
  }
  if (report.intact() && report.unsigned_records() > 0)
    std::cout << "note: the last " << report.unsigned_records()
              << " records are not yet covered by a signed checkpoint (the writer is running or "
                 "crashed); `airlock audit checkpoint` signs them\n";
}

int verify_command(const audit::LogLocation& location, const std::string& trusted_file, bool json) {
  const std::string path = location.describe();
  audit::VerifyOptions options;
  if (!trusted_file.empty()) {
    auto trusted = read_trusted_checkpoint(trusted_file);
    if (!trusted) return fail("verify", "--trusted: " + trusted.error().message);
    options.trusted = std::move(*trusted);
  }
  options.expected_key = key_file_public_key(location);
  auto reader = audit::LogReader::open(location);
  if (!reader) return fail("verify", reader.error().message);
  auto report = audit::verify_log(*reader, options);
  if (!report) return fail("verify", report.error().message);
  if (json) std::cout << audit::to_json(*report).dump(2) << "\n";
  else print_verify_report(*report, path);
  return report->intact() ? kGood : kTampered;
}

std::string member_text(const nlohmann::json& record, const char* key) {
  if (!record.contains(key)) return "-";
  const auto& value = record[key];
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// An approval's record (server/approvals/approvals.hpp): the event, and who decided for whom.
void print_approval_record(const nlohmann::json& record) {
  std::cout << rfc3339_ms(record.value("time", std::int64_t{0})) << "  " << member_text(record, "event") << "  "
            << member_text(record, "tool") << "  approval " << member_text(record, "approval_id");
  if (record.contains("approver")) {
    std::cout << "  " << member_text(record, "decision") << " by "
              << member_text(record.value("approver", nlohmann::json::object()), "sub");
    if (record.contains("relayed_by") && !record["relayed_by"].is_null())
      std::cout << " (relayed by " << member_text(record, "relayed_by") << ")";
    std::cout << "  reason " << member_text(record, "reason");
  }
  if (record.contains("status")) std::cout << "  -> " << member_text(record, "status");
  std::cout << "\n";
}

// `invocation`: only the records of that invocation (its chain: request, decisions, outcome).
int show_command(const audit::LogLocation& location, std::uint64_t from, bool json,
                 const std::string& invocation) {
  auto reader = audit::LogReader::open(location);
  if (!reader) return fail("show", reader.error().message);
  auto records = nlohmann::json::array();
  auto status = reader->for_each_record(from, [&](std::uint64_t index, std::string_view text) {
    auto record = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!invocation.empty() && (!record.is_object() || record.value("invocation_id", "") != invocation)) return true;
    if (json) {
      records.push_back(record.is_discarded() ? nlohmann::json(std::string(text)) : record);
      return true;
    }
    std::cout << "#" << index << "  ";
    if (record.is_discarded() || !record.is_object()) {
      std::cout << "(not JSON) " << text << "\n";
    } else if (record.value("schema", "") == "airlock.approval/v1") {
      print_approval_record(record);
    } else if (record.contains("schema") && record["schema"] == audit::kInvocationSchema) {
      const auto& exit = record.value("exit", nlohmann::json::object());
      std::cout << rfc3339_ms(record.value("time", std::int64_t{0})) << "  "
                << member_text(record, "principal") << "  " << member_text(record, "tool") << "  "
                << member_text(record, "verdict") << "  exit=" << member_text(exit, "code") << "  "
                << member_text(record, "command") << "\n";
    } else {
      std::cout << rfc3339_ms(record.value("time", std::int64_t{0})) << "  " << text << "\n";
    }
    return true;
  });
  if (!status) return fail("show", status.error().message);
  if (json) std::cout << records.dump(2) << "\n";
  return kGood;
}

int prove_command(const audit::LogLocation& location, std::uint64_t index) {
  const std::string path = location.describe();
  auto reader = audit::LogReader::open(location);
  if (!reader) return fail("prove", reader.error().message);
  auto proof = audit::prove_record(*reader, index);
  if (!proof) {
    fail("prove", proof.error().message);
    // A latest checkpoint whose signature fails is tampering, not a usage error.
    return proof.error().code == "bad_signature" ? kTampered : kError;
  }
  // Never hand out a proof that does not check: the log may be damaged.
  if (auto status = audit::verify_record_proof(*proof, reader->public_key()); !status) {
    std::cerr << "airlock audit prove: the proof does not check (" << status.error().message
              << "); run `airlock audit verify " << path << "`\n";
    return kTampered;
  }
  std::cout << proof->dump(2) << "\n";
  return kGood;
}

int checkpoint_command(const audit::LogLocation& location) {
  auto log = audit::AuditLog::open(location);
  if (!log) return fail("checkpoint", log.error().message);
  auto checkpoint = (*log)->checkpoint();
  if (!checkpoint) return fail("checkpoint", checkpoint.error().message);
  if (auto status = (*log)->close(); !status) return fail("checkpoint", status.error().message);
  std::cout << audit::checkpoint_envelope(*checkpoint, (*log)->public_key()).dump(2) << "\n";
  return kGood;
}

int export_command(const audit::LogLocation& location) {
  auto reader = audit::LogReader::open(location);
  if (!reader) return fail("export", reader.error().message);
  // The exact bytes each leaf hash covers, one per line: a canonical record has no raw newline.
  auto status = reader->for_each_record(0, [](std::uint64_t, std::string_view text) {
    std::cout << text << '\n';
    return static_cast<bool>(std::cout);
  });
  if (!status) return fail("export", status.error().message);
  std::cout.flush();
  return std::cout ? kGood : fail("export", "cannot write the output");
}

int key_command(const audit::LogLocation& location, bool json) {
  std::string key_file = location.signing_key_file();
  std::optional<audit::PublicKey> key = key_file_public_key(location);
  if (!key) {
    auto reader = audit::LogReader::open(location);
    if (!reader)
      return fail("key", "no readable key file " + key_file + " and no log: " +
                             reader.error().message);
    std::cerr << "airlock audit key: cannot read " << key_file
              << "; showing the key recorded in the log\n";
    key = reader->public_key();
  }
  if (json) {
    std::cout << nlohmann::json{{"algorithm", "ed25519"}, {"public_key", key->hex()},
                                {"key_id", key->key_id()}}.dump(2)
              << "\n";
  } else {
    std::cout << key->pem() << "ed25519 " << key->hex() << "\nkey id " << key->key_id() << "\n";
  }
  return kGood;
}


// The location, or exit status 2 with the reason.
template <typename Command>
int with_location(const char* name, const std::string& path, const std::string& config,
                  Command command) {
  auto location = log_location(path, config);
  if (!location) return fail(name, location.error().message);
  return command(*location);
}

void add_log_options(CLI::App* command, std::string& path, std::string& config) {
  command->add_option("path", path, "The audit log (a SQLite file)");
  command->add_option("--config", config,
                      "The daemon's configuration: its storage section names the log (SQLite or "
                      "PostgreSQL)");
}

}  // namespace

void add_audit_command(CLI::App& app, ExitStatus& status) {
  auto* audit = app.add_subcommand(kAuditCommand.name, kAuditCommand.summary);
  audit->require_subcommand(1);

  struct Options {
    std::string path, config, trusted, invocation;
    std::vector<std::string> prove_args;  // [path] index
    bool json = false, jsonl = false;
    std::uint64_t from = 0;
  };
  auto o = std::make_shared<Options>();

  auto* verify = audit->add_subcommand(
      "verify", "Recompute every leaf and root, check every signature; exit 0 good, 1 tampered, 2 error");
  add_log_options(verify, o->path, o->config);
  verify->add_option("--trusted", o->trusted,
                     "A checkpoint kept from before (`airlock audit checkpoint` output): catches "
                     "truncation, rollback and re-keying");
  verify->add_flag("--json", o->json, "Print the report as JSON");
  verify->callback([o, &status] {
    status.code = with_location("verify", o->path, o->config, [&](const audit::LogLocation& l) {
      return verify_command(l, o->trusted, o->json);
    });
  });

  auto* show = audit->add_subcommand("show", "Print records");
  add_log_options(show, o->path, o->config);
  show->add_option("--from", o->from, "First index to print (default 0)");
  show->add_flag("--json", o->json, "Print a JSON array of records");
  show->add_option("--invocation", o->invocation,
                   "Only the records of this invocation: its chain (an approval's request, each decision, "
                   "the expiry, the execution)");
  show->callback([o, &status] {
    status.code = with_location("show", o->path, o->config, [&](const audit::LogLocation& l) {
      return show_command(l, o->from, o->json, o->invocation);
    });
  });

  auto* prove = audit->add_subcommand(
      "prove", "Print a record, its inclusion proof and the latest checkpoint as JSON");
  prove->add_option("args", o->prove_args, "[path] index: the audit log (unless --config) and the record's index")
      ->required()->expected(1, 2);
  prove->add_option("--config", o->config,
                    "The daemon's configuration: its storage section names the log");
  prove->callback([o, &status] {
    const auto& args = o->prove_args;
    const std::string& index_text = args.back();
    if (index_text.empty() || index_text.size() > 19 ||
        index_text.find_first_not_of("0123456789") != std::string::npos) {
      status.code = fail("prove", "the index must be a whole number, not " + index_text);
      return;
    }
    const std::string path = args.size() == 2 ? args.front() : "";
    status.code = with_location("prove", path, o->config, [&](const audit::LogLocation& l) {
      return prove_command(l, std::stoull(index_text));
    });
  });

  auto* checkpoint = audit->add_subcommand(
      "checkpoint", "Sign a checkpoint over every record now and print it (keep it for --trusted)");
  add_log_options(checkpoint, o->path, o->config);
  checkpoint->callback([o, &status] {
    status.code = with_location("checkpoint", o->path, o->config, checkpoint_command);
  });

  auto* exporter = audit->add_subcommand("export", "Print every record exactly as hashed");
  add_log_options(exporter, o->path, o->config);
  exporter->add_flag("--jsonl", o->jsonl, "One canonical record per line")->required();
  exporter->callback([o, &status] {
    status.code = with_location("export", o->path, o->config, export_command);
  });

  auto* key = audit->add_subcommand("key", "Print the public key that signs the log's checkpoints");
  add_log_options(key, o->path, o->config);
  key->add_flag("--json", o->json, "Print the key as JSON");
  key->callback([o, &status] {
    status.code = with_location("key", o->path, o->config, [&](const audit::LogLocation& l) {
      return key_command(l, o->json);
    });
  });
}

}  // namespace airlock::cli
