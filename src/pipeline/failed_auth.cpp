#include "pipeline/failed_auth.hpp"

#include <iostream>
#include <nlohmann/json.hpp>

#include "audit/audit_log.hpp"

namespace airlock::pipeline {
namespace {

constexpr const char* kOverflowSource = "(other)";

// Request text in a record: printable ASCII only (canonical JSON needs valid UTF-8), cut.
std::string printable(std::string_view text, std::size_t max_bytes) {
  std::string out(text.substr(0, max_bytes));
  for (auto& c : out)
    if (c < 0x20 || c > 0x7e) c = '?';
  return out;
}

std::int64_t unix_ms(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

nlohmann::json record_fields(const std::string& source, const FailedAuthLog::Source& s) {
  nlohmann::json fields = {{"schema", "airlock.failed_auth/v1"},
                           {"source", source},
                           {"count", s.count},
                           {"first_ms", unix_ms(s.first)},
                           {"last_ms", unix_ms(s.last)},
                           {"reasons", s.reasons},
                           {"tools", s.tools},
                           {"other_tools", s.other_tools}};
  return fields;
}

}  // namespace

FailedAuthLog::FailedAuthLog(audit::AuditLog& log, FailedAuthOptions options)
    : log_(log), options_(options) {}

FailedAuthLog::~FailedAuthLog() {
  stop();
}

void FailedAuthLog::note(std::string_view source, std::string_view tool, std::string_view reason) {
  const auto now = std::chrono::system_clock::now();
  std::lock_guard lock(mu_);
  auto it = pending_.find(std::string(source));
  if (it == pending_.end()) {
    const bool full = pending_.size() >= options_.max_sources;
    it = pending_.try_emplace(full ? std::string(kOverflowSource) : std::string(source)).first;
  }
  Source& s = it->second;
  if (s.count++ == 0) s.first = now;
  s.last = now;
  ++s.reasons[std::string(reason)];
  std::string name = printable(tool, options_.max_name_bytes);
  auto t = s.tools.find(name);
  if (t != s.tools.end())
    ++t->second;
  else if (s.tools.size() < options_.max_tools)
    s.tools.emplace(std::move(name), 1);
  else
    ++s.other_tools;
}

Status FailedAuthLog::flush() {
  std::map<std::string, Source> batch;
  {
    std::lock_guard lock(mu_);
    batch.swap(pending_);
  }
  Status result;
  for (auto it = batch.begin(); it != batch.end();) {
    if (auto receipt = log_.append(record_fields(it->first, it->second)); !receipt) {
      result = receipt.error();
      break;
    }
    it = batch.erase(it);
  }
  if (batch.empty()) return result;
  // Not written: merged back, so the counts are not lost (a later flush retries).
  std::lock_guard lock(mu_);
  for (auto& [source, s] : batch) {
    auto [it, fresh] = pending_.try_emplace(source, s);
    if (fresh) continue;
    Source& into = it->second;
    into.count += s.count;
    into.first = std::min(into.first, s.first);
    for (const auto& [r, n] : s.reasons) into.reasons[r] += n;
    for (const auto& [t, n] : s.tools) into.tools[t] += n;
    into.other_tools += s.other_tools;
  }
  return result;
}

void FailedAuthLog::start() {
  std::lock_guard lock(mu_);
  if (flusher_.joinable() || stopping_) return;
  flusher_ = std::thread([this] { run_flusher(); });
}

void FailedAuthLog::run_flusher() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, options_.interval, [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    if (auto s = flush(); !s)
      std::cerr << "airlock serve: failed authentications not recorded yet: " << s.error().message
                << "\n";
    lock.lock();
  }
}

void FailedAuthLog::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (flusher_.joinable()) flusher_.join();
  if (auto s = flush(); !s)
    std::cerr << "airlock serve: failed authentications could not be recorded: "
              << s.error().message << "\n";
}

}  // namespace airlock::pipeline
