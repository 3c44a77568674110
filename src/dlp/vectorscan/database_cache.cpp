#include "dlp/vectorscan/database_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>

#include "common/digest.hpp"
#include "common/unique_fd.hpp"

namespace airlock::dlp::detail {
namespace {

constexpr std::string_view kMagic = "airlock-dlp-database 1\n";
constexpr std::size_t kHexDigest = 64;

// Owned by this user, not writable by group or others.
Status check_owner_and_mode(const struct stat& st, const std::string& what) {
  if (st.st_uid != geteuid()) return Error::make("dlp_cache", what + " belongs to another user");
  if (st.st_mode & (S_IWGRP | S_IWOTH)) return Error::make("dlp_cache", what + " is writable by others");
  return Status::success();
}

Result<std::string> read_whole(int fd, std::size_t size) {
  std::string bytes(size, '\0');
  std::size_t done = 0;
  while (done < size) {
    ssize_t n = ::read(fd, bytes.data() + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error::make("dlp_cache", "the cache file could not be read");
    done += static_cast<std::size_t>(n);
  }
  return bytes;
}

bool write_whole(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

Status ensure_directory(const std::string& directory) {
  // Each missing level is made 0700; the last one must pass the owner and mode check.
  for (std::size_t slash = directory.find('/', 1);; slash = directory.find('/', slash + 1)) {
    std::string level = directory.substr(0, slash);
    if (::mkdir(level.c_str(), 0700) != 0 && errno != EEXIST)
      return Error::make("dlp_cache", level + ": " + std::strerror(errno));
    if (slash == std::string::npos) break;
  }
  struct stat st {};
  if (::lstat(directory.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return Error::make("dlp_cache", directory + " is not a directory");
  return check_owner_and_mode(st, "the cache directory " + directory);
}

// The CPU features Vectorscan's targets differ by: a home directory shared between machines
// keeps one file per kind of CPU.
std::string cpu_features() {
  std::string features;
#if defined(__x86_64__)
  // __builtin_cpu_supports takes a literal only.
#define AIRLOCK_FEATURE(name) \
  if (__builtin_cpu_supports(name)) features += name ",";
  AIRLOCK_FEATURE("sse4.2") AIRLOCK_FEATURE("popcnt") AIRLOCK_FEATURE("avx2") AIRLOCK_FEATURE("bmi2")
  AIRLOCK_FEATURE("avx512f") AIRLOCK_FEATURE("avx512bw") AIRLOCK_FEATURE("avx512vl")
  AIRLOCK_FEATURE("avx512vbmi")
#undef AIRLOCK_FEATURE
#endif
  return features;
}

std::string write_widths(const std::vector<unsigned>& widths) {
  std::string line;
  for (unsigned w : widths) line += (line.empty() ? "" : ",") + std::to_string(w);
  return line + "\n";
}

// Takes the widths line off the front of `payload`: exactly `count` numbers.
bool read_widths(std::string_view& payload, std::size_t count, std::vector<unsigned>& widths) {
  const std::size_t newline = payload.find('\n');
  if (newline == std::string_view::npos) return false;
  std::string_view line = payload.substr(0, newline);
  payload.remove_prefix(newline + 1);
  while (!line.empty()) {
    const std::size_t comma = std::min(line.find(','), line.size());
    unsigned value = 0;
    auto [end, ec] = std::from_chars(line.data(), line.data() + comma, value);
    if (ec != std::errc() || end != line.data() + comma) return false;
    widths.push_back(value);
    line.remove_prefix(comma == line.size() ? comma : comma + 1);
  }
  return widths.size() == count;
}

}  // namespace

std::string DatabaseCache::default_directory() {
  if (const char* dir = std::getenv("AIRLOCK_DLP_CACHE_DIR")) {
    std::string value = dir;
    return value == "off" ? std::string() : value;
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && xdg[0] == '/')
    return std::string(xdg) + "/airlock/dlp";
  if (const char* home = std::getenv("HOME"); home && home[0] == '/')
    return std::string(home) + "/.cache/airlock/dlp";
  return {};
}

std::string DatabaseCache::key(const std::vector<PatternSpec>& patterns, unsigned mode) {
  // Length-prefixed fields: no two different inputs write the same bytes.
  std::string inputs;
  auto field = [&](std::string_view value) {
    inputs += std::to_string(value.size());
    inputs += ':';
    inputs += value;
  };
  field(kMagic);
  field(hs_version());
  field(std::to_string(mode));
  field(scan_dispatch());  // the target databases are compiled for
  field(cpu_features());     // and the host's, which the default target is
  for (const auto& p : patterns) {
    field(p.expression);
    field(std::to_string(p.id));
    field(std::to_string(p.flags));
  }
  return sha256_hex(inputs);
}

std::string DatabaseCache::path(const std::string& key) const { return directory_ + "/" + key + ".hsdb"; }

Result<DatabaseCache::Entry> DatabaseCache::load(const std::string& key, std::size_t count) const {
  const std::string file = path(key);
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return Error::make("dlp_cache", file + ": " + std::strerror(errno));
  struct stat dir_st {}, st {};
  if (::stat(directory_.c_str(), &dir_st) != 0) return Error::make("dlp_cache", directory_ + ": not found");
  if (auto ok = check_owner_and_mode(dir_st, "the cache directory " + directory_); !ok) return ok.error();
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    return Error::make("dlp_cache", file + " is not a regular file");
  if (auto ok = check_owner_and_mode(st, file); !ok) return ok.error();
  auto bytes = read_whole(fd.get(), static_cast<std::size_t>(st.st_size));
  if (!bytes) return bytes.error();
  // kMagic, the key, the payload's SHA-256 (each hex, each on its line), then the payload: the
  // widths ("w1,w2,...\n") and the serialised database.
  const std::size_t header = kMagic.size() + 2 * (kHexDigest + 1);
  std::string_view view = *bytes;
  if (view.size() <= header || view.substr(0, kMagic.size()) != kMagic)
    return Error::make("dlp_cache", file + " is not a database cache file");
  if (view.substr(kMagic.size(), kHexDigest) != key)
    return Error::make("dlp_cache", file + " holds the database of another pattern set");
  std::string_view digest = view.substr(kMagic.size() + kHexDigest + 1, kHexDigest);
  std::string_view payload = view.substr(header);
  if (sha256_hex(payload) != digest)
    return Error::make("dlp_cache", file + ": the database does not match its digest (altered or truncated)");
  Entry entry;
  if (!read_widths(payload, count, entry.widths))
    return Error::make("dlp_cache", file + ": the pattern widths are not those of this pattern set");
  hs_database_t* database = nullptr;
  if (hs_deserialize_database(payload.data(), payload.size(), &database) != HS_SUCCESS)
    return Error::make("dlp_cache", file + ": Vectorscan could not load the database");
  entry.database.reset(database);
  return entry;
}

Status DatabaseCache::store(const std::string& key, const hs_database_t* database,
                            const std::vector<unsigned>& widths) const {
  if (auto ok = ensure_directory(directory_); !ok) return ok;
  char* serialized = nullptr;
  std::size_t length = 0;
  if (hs_serialize_database(database, &serialized, &length) != HS_SUCCESS)
    return Error::make("dlp_cache", "Vectorscan could not serialise the database");
  std::string payload = write_widths(widths);
  payload.append(serialized, length);
  std::free(serialized);  // Vectorscan's default allocator (malloc)
  std::string content = std::string(kMagic) + key + "\n" + sha256_hex(payload) + "\n" + payload;
  std::string temporary = path(key) + ".XXXXXX";
  UniqueFd fd(::mkstemp(temporary.data()));
  if (!fd) return Error::make("dlp_cache", temporary + ": " + std::strerror(errno));
  bool written = write_whole(fd.get(), content) && ::fsync(fd.get()) == 0;
  if (!written || ::rename(temporary.c_str(), path(key).c_str()) != 0) {
    ::unlink(temporary.c_str());
    return Error::make("dlp_cache", path(key) + ": could not be written");
  }
  return Status::success();
}

Result<DatabaseCache::Entry> load_or_compile(const std::vector<PatternSpec>& patterns, unsigned mode,
                                             const std::string& cache_directory, bool& from_cache) {
  from_cache = false;
  DatabaseCache cache(cache_directory);
  const std::string key = cache_directory.empty() ? std::string() : DatabaseCache::key(patterns, mode);
  if (!key.empty())
    if (auto loaded = cache.load(key, patterns.size())) {
      from_cache = true;
      return loaded;
    }
  DatabaseCache::Entry entry;
  for (const auto& p : patterns) entry.widths.push_back(max_match_width(p.expression, p.flags));
  auto compiled = compile_database(patterns, mode);
  if (!compiled) return compiled.error();
  entry.database = std::move(*compiled);
  if (!key.empty()) (void)cache.store(key, entry.database.get(), entry.widths);  // best effort
  return entry;
}

}  // namespace airlock::dlp::detail
