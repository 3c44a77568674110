// For the state stores' tests, each suite typed over both stores: SQLite (a state.db in a
// scratch directory) and PostgreSQL (a fresh database in one throwaway cluster per test
// program, tests/support/pg_cluster). Both expose the StateLocation the daemon would use, so
// a suite opens a store as the daemon does (the store's factory) and can open it twice, as
// two replicas (or the daemon and the CLI) would.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

#include "pg_cluster.hpp"
#include "storage/state_location.hpp"

namespace airlock::test {

inline const std::string kStateRole = "airlock_state";
inline const std::string kStatePassword = "St4te-pw-" + std::to_string(::getpid());

// Started on first use (from the main thread, which outlives it), stopped at exit.
inline PgCluster& state_cluster() {
  static std::unique_ptr<PgCluster> instance = [] {
    auto started = PgCluster::start();
    if (!started) throw std::runtime_error("cannot start PostgreSQL: " + started.error().message);
    auto role = (*started)->exec("CREATE ROLE " + kStateRole + " LOGIN PASSWORD '" + kStatePassword + "'");
    if (!role) throw std::runtime_error(role.error().message);
    return std::move(*started);
  }();
  return *instance;
}

class StateScratchDir {
 public:
  StateScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "airlock-state-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~StateScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  StateScratchDir(const StateScratchDir&) = delete;
  StateScratchDir& operator=(const StateScratchDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

struct SqliteState {
  static constexpr const char* kName = "SQLite";
  StateScratchDir dir;
  storage::StateLocation location() const {
    storage::StateLocation l;
    l.sqlite_path = dir.file("state.db");
    return l;
  }
};

struct PostgresState {
  static constexpr const char* kName = "PostgreSQL";
  std::string database = [] {
    static std::atomic<int> counter{0};
    std::string name = "state_" + std::to_string(counter++);
    auto made = state_cluster().exec("CREATE DATABASE " + name + " OWNER " + kStateRole);
    if (!made) throw std::runtime_error(made.error().message);
    return name;
  }();
  storage::StateLocation location() const {
    storage::StateLocation l;
    l.postgres.url = state_cluster().url(kStateRole, kStatePassword, database);
    return l;
  }
};

struct StoreNames {
  template <typename T>
  static std::string GetName(int) {
    return T::kName;
  }
};

using BothStores = ::testing::Types<SqliteState, PostgresState>;

}  // namespace airlock::test
