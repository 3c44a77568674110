// Compiled Vectorscan databases kept on disk between processes. Compiling the detectors' block
// database is most of the time a short `airlock scan` takes (docs/performance.md): a process
// with the same pattern set, Vectorscan build and target loads the serialised database instead.
//
// A cache file is trusted only as far as the checks below say; any doubt is a miss (the caller
// compiles, as without a cache) and a file that fails a check is replaced:
//   - its key is the SHA-256 of everything the compile depends on (a format version, the
//     Vectorscan version, the mode, the target, each pattern's expression, id and flags), so
//     a cache for another pattern set is another file, and a file whose recorded key is not
//     the one asked for is not used;
//   - the payload's SHA-256 is recorded and checked (a truncated or altered file is refused);
//   - the directory and the file must belong to this user and be writable by no one else
//     (another user could otherwise plant a database that finds nothing);
//   - the caller still runs its self-check (every detector finds its example) on what loaded.
#pragma once

#include <string>
#include <vector>

#include "common/result.hpp"
#include "dlp/vectorscan/vectorscan.hpp"

namespace airlock::dlp::detail {

class DatabaseCache {
 public:
  // AIRLOCK_DLP_CACHE_DIR if set ("" or "off": no cache), else $XDG_CACHE_HOME/airlock/dlp,
  // else $HOME/.cache/airlock/dlp; "" when none applies.
  static std::string default_directory();

  explicit DatabaseCache(std::string directory) : directory_(std::move(directory)) {}

  // The key of a compile: hex SHA-256 of all its inputs.
  static std::string key(const std::vector<PatternSpec>& patterns, unsigned mode);
  // The file a key is stored in.
  std::string path(const std::string& key) const;

  // What is cached for a key: the database and each pattern's longest match (working that
  // out compiles each pattern again: a quarter of a short scan's start).
  struct Entry {
    Database database;
    std::vector<unsigned> widths;
  };
  // The entry stored under `key` for `count` patterns; an error says why not (absent, unsafe,
  // altered, another key, not loadable by this Vectorscan).
  Result<Entry> load(const std::string& key, std::size_t count) const;
  // Writes the entry under `key` (a temporary file renamed into place); creates the directory
  // (0700) if needed.
  Status store(const std::string& key, const hs_database_t* database,
               const std::vector<unsigned>& widths) const;

 private:
  std::string directory_;
};

// The database and widths for `patterns`: loaded from the cache when it has a good entry, else
// compiled and worked out (and stored). `from_cache` says which.
Result<DatabaseCache::Entry> load_or_compile(const std::vector<PatternSpec>& patterns, unsigned mode,
                                             const std::string& cache_directory, bool& from_cache);

}  // namespace airlock::dlp::detail
