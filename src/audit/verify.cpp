#include "audit/verify.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <nlohmann/json.hpp>

#include "audit/canonical_json.hpp"
#include "audit/detail/log_store.hpp"
#include "audit/merkle.hpp"

namespace airlock::audit {

std::string_view tamper_kind_name(TamperKind kind) {
  switch (kind) {
    case TamperKind::modified: return "modified";
    case TamperKind::missing: return "missing";
    case TamperKind::inserted: return "inserted";
    case TamperKind::reordered: return "reordered";
    case TamperKind::truncated: return "truncated";
    case TamperKind::bad_signature: return "bad_signature";
    case TamperKind::inconsistent: return "inconsistent";
  }
  return "inconsistent";
}

namespace {

std::string str(std::uint64_t n) { return std::to_string(n); }

std::optional<std::uint64_t> parse_index_member(std::string_view record) {
  auto text = find_top_level_member(record, "index");
  if (!text || text->empty()) return std::nullopt;
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || end != text->data() + text->size()) return std::nullopt;
  return value;
}

std::string_view as_text(ByteView bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

bool equal_bytes(ByteView a, ByteView b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

// Everything the record pass learned about one row, for naming what is wrong with it.
struct RowFacts {
  std::uint64_t position = 0;  // where the row sits in index order
  std::uint64_t rowid = 0;
  std::optional<std::uint64_t> index_member;
  bool prev_matches = false;     // "prev" is the previous position's recomputed leaf hash
  bool stored_leaf_matches = false;
  bool stored_subtrees_match = false;
  Hash leaf{};

  bool sound() const {
    return rowid == position && index_member == position && prev_matches && stored_leaf_matches &&
           stored_subtrees_match;
  }
};

// A size at which the recomputed root must equal a signed one.
struct RootTarget {
  std::uint64_t size = 0;
  Hash root{};
  std::string source;  // "the checkpoint at size N", "the trusted checkpoint"
  bool trusted = false;
};

class LogVerifier {
 public:
  LogVerifier(LogReader& reader, const VerifyOptions& options)
      : reader_(reader), store_(reader.store()), options_(options) {}

  Result<VerifyReport> run() {
    check_keys();
    if (auto status = check_checkpoints(); !status) return status.error();
    if (auto status = scan_records(); !status) return status.error();
    check_truncation();
    if (!record_anomaly_) {
      if (auto status = check_mutual_consistency(); !status) return status.error();
    }
    std::stable_sort(report_.findings.begin(), report_.findings.end(),
                     [](const Tampering& a, const Tampering& b) {
                       // Key and checkpoint findings first, then records by index.
                       if (a.index.has_value() != b.index.has_value()) return !a.index.has_value();
                       return a.index.value_or(0) < b.index.value_or(0);
                     });
    return std::move(report_);
  }

 private:
  void add(TamperKind kind, std::optional<std::uint64_t> index,
           std::optional<std::uint64_t> checkpoint_size, std::string detail) {
    report_.findings.push_back({kind, index, checkpoint_size, std::move(detail)});
  }

  // The key checkpoints must be signed with: the trusted checkpoint's when there is one (the
  // key in the file is only as trustworthy as the file).
  void check_keys() {
    const PublicKey& log_key = reader_.public_key();
    signing_key_ = log_key;
    if (options_.trusted) {
      signing_key_ = options_.trusted->key;
      if (log_key != options_.trusted->key)
        add(TamperKind::bad_signature, std::nullopt, std::nullopt,
            "the log's public key " + log_key.key_id() + " is not the trusted key " +
                options_.trusted->key.key_id() + ": the log was re-keyed");
      const Checkpoint& trusted = options_.trusted->signed_checkpoint.checkpoint;
      if (trusted.origin != reader_.origin())
        add(TamperKind::inconsistent, std::nullopt, trusted.size,
            "the trusted checkpoint is for log " + trusted.origin + ", this log is " +
                reader_.origin());
    }
    if (options_.expected_key && *options_.expected_key != log_key)
      add(TamperKind::bad_signature, std::nullopt, std::nullopt,
          "the log's public key " + log_key.key_id() + " does not match its key file (" +
              options_.expected_key->key_id() + ")");
  }

  Status check_checkpoints() {
    auto rows = store_.checkpoints();
    if (!rows) return rows.error();
    report_.checkpoints = rows->size();
    for (const auto& row : *rows) {
      auto parsed = detail::parse_stored_checkpoint(row);
      if (!parsed) {
        add(TamperKind::bad_signature, std::nullopt, row.size,
            "the checkpoint stored for size " + str(row.size) + " is malformed: " +
                parsed.error().message);
        continue;
      }
      if (auto status = verify_checkpoint_signature(*parsed, signing_key_); !status) {
        add(TamperKind::bad_signature, std::nullopt, row.size,
            "the checkpoint at size " + str(row.size) + ": " + status.error().message +
                " (the log's key)");
        continue;
      }
      const Checkpoint& cp = parsed->checkpoint;
      if (cp.size != row.size) {
        add(TamperKind::inconsistent, std::nullopt, row.size,
            "the checkpoint stored for size " + str(row.size) + " is the one signed for size " +
                str(cp.size) + ": checkpoints were moved");
        continue;
      }
      if (cp.origin != reader_.origin()) {
        add(TamperKind::inconsistent, std::nullopt, row.size,
            "the checkpoint at size " + str(row.size) + " is for log " + cp.origin);
        continue;
      }
      valid_checkpoints_.push_back(std::move(*parsed));
    }
    for (const auto& cp : valid_checkpoints_)
      targets_.push_back({cp.checkpoint.size, cp.checkpoint.root,
                          "the checkpoint signed at size " + str(cp.checkpoint.size), false});
    if (options_.trusted) {
      const Checkpoint& trusted = options_.trusted->signed_checkpoint.checkpoint;
      targets_.push_back({trusted.size, trusted.root, "the trusted checkpoint", true});
    }
    std::stable_sort(targets_.begin(), targets_.end(),
                     [](const RootTarget& a, const RootTarget& b) { return a.size < b.size; });
    return {};
  }

  // One pass over every row in index order; stops at the first row that is not sound, or the
  // first signed root the recomputed tree does not reach.
  Status scan_records() {
    auto cursor = store_.records_from(0);
    if (!cursor) return cursor.error();
    MerkleFrontier frontier;
    Hash previous_leaf{};
    std::uint64_t last_matched_size = 0;
    std::size_t next_target = 0;
    if (!check_roots_at(frontier, next_target, last_matched_size)) return {};
    while (true) {
      auto has_row = (*cursor)->next();
      if (!has_row) return has_row.error();
      if (!*has_row) break;
      RowFacts row;
      row.position = frontier.size();
      row.rowid = (*cursor)->index();
      std::string_view record = as_text((*cursor)->record());
      row.leaf = leaf_hash((*cursor)->record());
      row.index_member = parse_index_member(record);
      row.prev_matches =
          find_top_level_member(record, "prev") == quoted_hex(previous_leaf);
      row.stored_leaf_matches = equal_bytes((*cursor)->leaf_hash(), ByteView(row.leaf));
      MerkleFrontier::Completed completed = frontier.append(row.leaf);
      row.stored_subtrees_match =
          equal_bytes((*cursor)->subtree_hashes(),
                      ByteView(completed.hashes.front().data(), completed.count * kHashSize));
      if (!row.sound()) {
        record_anomaly_ = true;
        auto finding = diagnose(row);
        if (!finding) return finding.error();
        report_.findings.push_back(std::move(*finding));
        report_.records = row.position;
        return {};
      }
      previous_leaf = row.leaf;
      report_.record_bytes += record.size();
      if (!check_roots_at(frontier, next_target, last_matched_size)) {
        report_.records = frontier.size();
        return {};
      }
    }
    report_.records = frontier.size();
    report_.root = frontier.root();
    for (const auto& cp : valid_checkpoints_)
      if (cp.checkpoint.size <= report_.records) report_.signed_size = cp.checkpoint.size;
    return {};
  }

  // Compares the root with every target at the frontier's size; false on a mismatch.
  bool check_roots_at(const MerkleFrontier& frontier, std::size_t& next_target,
                      std::uint64_t& last_matched_size) {
    while (next_target < targets_.size() && targets_[next_target].size == frontier.size()) {
      const RootTarget& target = targets_[next_target++];
      if (frontier.root() == target.root) {
        last_matched_size = target.size;
        continue;
      }
      record_anomaly_ = true;
      if (target.trusted) {
        // The log's own checkpoints may all agree with its records: it was rewritten and
        // re-signed after the trusted checkpoint was taken, and nothing in it says where.
        add(TamperKind::modified, std::nullopt, target.size,
            "records 0.." + str(target.size - 1) + " do not produce the root of " +
                target.source + ": the log was rewritten (forked) since it was trusted");
      } else {
        std::uint64_t from = last_matched_size < target.size ? last_matched_size : 0;
        add(TamperKind::modified, from, target.size,
            "records " + str(from) + ".." + str(target.size - 1) +
                " do not produce the root of " + target.source +
                " (each record and its stored hashes agree, so they were rewritten together; "
                "the first bad index is in that range)");
      }
      return false;
    }
    return true;
  }

  // Whether the row after `position` claims index `index` (an inserted record pushed the
  // genuine one there).
  Result<bool> next_row_claims(std::uint64_t position, std::uint64_t index) {
    auto cursor = store_.records_from(position + 1);
    if (!cursor) return cursor.error();
    auto row = (*cursor)->next();
    if (!row) return row.error();
    return *row && parse_index_member(as_text((*cursor)->record())) == index;
  }

  // Names what is wrong with a row that is not sound. The checks go from the most to the
  // least specific explanation; see docs/audit.md, "What verify reports".
  Result<Tampering> diagnose(const RowFacts& row) {
    std::uint64_t p = row.position;
    auto finding = [&](TamperKind kind, std::uint64_t index, std::string detail) {
      return Tampering{kind, index, std::nullopt, std::move(detail)};
    };
    if (row.rowid != p)
      return finding(TamperKind::missing, p,
                     row.rowid - p == 1 ? "record " + str(p) + " is missing (deleted)"
                                        : "records " + str(p) + ".." + str(row.rowid - 1) +
                                              " are missing (deleted)");
    if (!row.index_member)
      return finding(TamperKind::modified, p,
                     "record " + str(p) + " is no longer a well-formed audit record");
    std::uint64_t f = *row.index_member;
    if (f == p) {
      if (!row.stored_leaf_matches || !row.prev_matches) {
        auto claimed = next_row_claims(p, p);
        if (!claimed) return claimed.error();
        if (*claimed)
          return finding(TamperKind::inserted, p,
                         "positions " + str(p) + " and " + str(p + 1) + " both hold a record " +
                             str(p) + ": one was inserted");
      }
      if (!row.stored_leaf_matches)
        return finding(TamperKind::modified, p,
                       "record " + str(p) + " does not match the hash stored when it was written");
      if (!row.prev_matches) {
        if (p == 0) return finding(TamperKind::modified, 0, "record 0's prev is not all zeros");
        return finding(TamperKind::modified, p - 1,
                       "record " + str(p - 1) + " does not hash to the prev that record " +
                           str(p) + " holds: it was rewritten (with its stored hash), or " +
                           "record " + str(p) + "'s prev was");
      }
      return finding(TamperKind::modified, p,
                     "the tree hashes stored with record " + str(p) +
                         " differ from the recomputed ones (proofs from them would fail)");
    }
    // The index member disagrees with the position.
    if (row.prev_matches)
      return finding(TamperKind::modified, p,
                     "record " + str(p) + " says it is record " + str(f) +
                         ", but its prev places it at " + str(p) + ": it was edited");
    bool intact_copy = row.stored_leaf_matches;
    if (!intact_copy) {
      auto stored = store_.stored_leaf_hash(f);
      if (!stored) return stored.error();
      intact_copy = *stored && **stored == row.leaf;
    }
    if (!intact_copy)
      return finding(TamperKind::modified, p,
                     "record " + str(p) + " was edited (it now claims index " + str(f) + ")");
    if (f + 1 == p) return diagnose_adjacent_duplicate(p);
    if (f < p)
      return finding(TamperKind::inserted, p,
                     "position " + str(p) + " holds a second copy of record " + str(f));
    return diagnose_forward_index(p, f);
  }

  // Positions p-1 and p both hold a record p-1, and both chain from record p-2: a forged
  // record was inserted with the right index and prev. Which one? The one whose removal gives
  // back the root of the first signed checkpoint that covers p-1.
  Result<Tampering> diagnose_adjacent_duplicate(std::uint64_t p) {
    std::uint64_t inserted = p;
    std::string how = "positions " + str(p - 1) + " and " + str(p) + " both hold a record " +
                      str(p - 1) + "; ";
    const RootTarget* target = nullptr;
    for (const auto& t : targets_)
      if (t.size >= p) {
        target = &t;
        break;
      }
    if (target != nullptr) {
      for (std::uint64_t candidate : {p, p - 1}) {  // an exact copy: the later one
        auto root = root_without_row(candidate, target->size);
        if (!root) return root.error();
        if (*root && **root == target->root) {
          inserted = candidate;
          how += "without position " + str(candidate) + " the log has the root of " +
                 target->source;
          break;
        }
      }
    }
    if (how.back() == ' ') how += "no signed root tells which is genuine";
    return Tampering{TamperKind::inserted, inserted, std::nullopt,
                     "position " + str(inserted) + " holds an inserted record (" + how + ")"};
  }

  // The root over the first `size` rows after skipping the row at `position`; nullopt when
  // there are not enough rows.
  Result<std::optional<Hash>> root_without_row(std::uint64_t position, std::uint64_t size) {
    auto cursor = store_.records_from(0);
    if (!cursor) return cursor.error();
    MerkleFrontier frontier;
    for (std::uint64_t row_position = 0; frontier.size() < size; ++row_position) {
      auto row = (*cursor)->next();
      if (!row) return row.error();
      if (!*row) return std::optional<Hash>();
      if (row_position != position) frontier.append(leaf_hash((*cursor)->record()));
    }
    return std::optional<Hash>(frontier.root());
  }

  // Position p holds record f > p: p was moved later (reordered), f was duplicated here
  // (inserted), or p..f-1 are gone (missing).
  Result<Tampering> diagnose_forward_index(std::uint64_t p, std::uint64_t f) {
    auto cursor = store_.records_from(p + 1);
    if (!cursor) return cursor.error();
    std::optional<std::uint64_t> position_of_p;
    bool f_seen_again = false;
    for (std::uint64_t position = p + 1;; ++position) {
      auto row = (*cursor)->next();
      if (!row) return row.error();
      if (!*row) break;
      auto index = parse_index_member(as_text((*cursor)->record()));
      if (index == p && !position_of_p) position_of_p = position;
      if (index == f) f_seen_again = true;
      if (position_of_p && f_seen_again) break;
    }
    if (f_seen_again)
      return Tampering{TamperKind::inserted, p, std::nullopt,
                       "position " + str(p) + " holds a copy of record " + str(f)};
    if (position_of_p)
      return Tampering{TamperKind::reordered, p, std::nullopt,
                       "record " + str(p) + " is at position " + str(*position_of_p) +
                           " and position " + str(p) + " holds record " + str(f)};
    return Tampering{TamperKind::missing, p, std::nullopt,
                     f - p == 1 ? "record " + str(p) + " is missing (deleted)"
                                : "records " + str(p) + ".." + str(f - 1) +
                                      " are missing (deleted)"};
  }

  void check_truncation() {
    if (record_anomaly_) return;
    std::uint64_t n = report_.records;
    for (const auto& target : targets_) {
      if (target.size > n) {
        add(TamperKind::truncated, n, target.size,
            "the log has " + str(n) + " records but " + target.source + " covers " +
                str(target.size) + ": records " + str(n) + ".." + str(target.size - 1) +
                " were cut off (or the log was rolled back)");
        return;
      }
    }
  }

  // Consecutive valid checkpoints must be consistent: the proof comes from the stored tree,
  // as a third party would receive it, and is checked by the RFC 9162 verifier.
  Status check_mutual_consistency() {
    const SignedCheckpoint* previous = nullptr;
    for (const auto& cp : valid_checkpoints_) {
      if (cp.checkpoint.size > report_.records) break;
      if (previous != nullptr && previous->checkpoint.size > 0) {
        const Checkpoint& a = previous->checkpoint;
        const Checkpoint& b = cp.checkpoint;
        auto proof = reader_.consistency_proof(a.size, b.size);
        Status status = proof ? verify_consistency(a.size, b.size, *proof, a.root, b.root)
                              : Status(proof.error());
        if (!status)
          add(TamperKind::inconsistent, std::nullopt, b.size,
              "the checkpoints at sizes " + str(a.size) + " and " + str(b.size) +
                  " are not consistent: " + status.error().message);
      }
      previous = &cp;
    }
    return {};
  }

  LogReader& reader_;
  detail::LogStore& store_;
  const VerifyOptions& options_;
  VerifyReport report_;
  PublicKey signing_key_;
  std::vector<SignedCheckpoint> valid_checkpoints_;
  std::vector<RootTarget> targets_;
  bool record_anomaly_ = false;
};

}  // namespace

Result<VerifyReport> verify_log(LogReader& reader, const VerifyOptions& options) {
  if (auto status = reader.begin_snapshot(); !status) return status.error();
  auto report = LogVerifier(reader, options).run();
  reader.end_snapshot();
  return report;
}

std::string describe(const Tampering& finding) {
  std::string text(tamper_kind_name(finding.kind));
  if (finding.index) text += " at index " + str(*finding.index);
  else if (finding.checkpoint_size) text += " (checkpoint at size " + str(*finding.checkpoint_size) + ")";
  return text + ": " + finding.detail;
}

nlohmann::json to_json(const VerifyReport& report) {
  auto findings = nlohmann::json::array();
  for (const auto& f : report.findings) {
    nlohmann::json j{{"kind", tamper_kind_name(f.kind)}, {"detail", f.detail}};
    j["index"] = f.index ? nlohmann::json(*f.index) : nlohmann::json();
    j["checkpoint_size"] = f.checkpoint_size ? nlohmann::json(*f.checkpoint_size) : nlohmann::json();
    findings.push_back(std::move(j));
  }
  return {{"intact", report.intact()},
          {"records", report.records},
          {"record_bytes", report.record_bytes},
          {"checkpoints", report.checkpoints},
          {"signed_size", report.signed_size},
          {"unsigned_records", report.unsigned_records()},
          {"root", report.intact() ? nlohmann::json(to_hex(report.root)) : nlohmann::json()},
          {"findings", std::move(findings)}};
}

}  // namespace airlock::audit
