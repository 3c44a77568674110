// The background checkpointer (wal_checkpoints.hpp): one thread per process, started by the
// first request.
#include "storage/wal_checkpoints.hpp"

#include <sqlite3.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>

namespace airlock::storage {
namespace {

class Checkpointer {
 public:
  // Never destroyed: its thread may outlive main's return, and a child forked from this
  // process (a sandbox's) must not try to join a thread it does not have.
  static Checkpointer& instance() {
    static auto* checkpointer = new Checkpointer;
    return *checkpointer;
  }

  void request(const std::string& path) {
    {
      std::lock_guard lock(mu_);
      pending_.insert(path);
      if (!started_) {
        std::thread([this] { run(); }).detach();
        started_ = true;
      }
    }
    wake_.notify_one();
  }

  // Held: returns once no checkpoint of the thread's is under way.
  void hold(bool held) {
    {
      std::unique_lock lock(mu_);
      held_ = held;
      if (held) idle_.wait(lock, [&] { return !busy_; });
    }
    wake_.notify_one();
  }

  std::atomic<std::uint64_t> background{0}, inline_{0};

 private:
  void run() {
    std::unique_lock lock(mu_);
    for (;;) {
      wake_.wait(lock, [&] { return !held_ && !pending_.empty(); });
      const std::set<std::string> paths = std::move(pending_);
      pending_.clear();
      busy_ = true;
      lock.unlock();
      for (const auto& path : paths) checkpoint(path);
      lock.lock();
      busy_ = false;
      idle_.notify_all();
    }
  }

  // A connection of its own for each checkpoint, closed after: none is kept open on a file
  // its daemon has closed (or removed). A failure (the file gone, the database busy) is left
  // to the next request, or to the writers' inline bound.
  void checkpoint(const std::string& path) {
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) == SQLITE_OK) {
      // FULL: the WAL is synced before its pages are copied and the database after, so the
      // WAL restarts only over pages the database file durably holds.
      sqlite3_exec(db, "PRAGMA synchronous=FULL", nullptr, nullptr, nullptr);
      if (sqlite3_wal_checkpoint_v2(db, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr) == SQLITE_OK) ++background;
    }
    sqlite3_close(db);
  }

  std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::set<std::string> pending_;
  bool held_ = false, started_ = false, busy_ = false;
};

int on_commit(void*, sqlite3* db, const char* schema, int frames) {
  if (frames >= kInlineCheckpointFrames) {
    if (sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr) == SQLITE_OK)
      ++Checkpointer::instance().inline_;
  } else if (frames >= kBackgroundCheckpointFrames) {
    if (const char* file = sqlite3_db_filename(db, schema); file != nullptr && *file != '\0')
      Checkpointer::instance().request(file);
  }
  return SQLITE_OK;
}

}  // namespace

void checkpoint_in_background(sqlite3* db) { sqlite3_wal_hook(db, on_commit, nullptr); }

CheckpointCounts checkpoint_counts() {
  auto& c = Checkpointer::instance();
  return {c.background.load(), c.inline_.load()};
}

void hold_background_checkpoints(bool held) { Checkpointer::instance().hold(held); }

}  // namespace airlock::storage
