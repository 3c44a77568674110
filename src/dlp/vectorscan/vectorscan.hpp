// Owning wrappers for Vectorscan (the portable Hyperscan) databases, scratch space and streams,
// and a pool that lends each concurrent scan its own scratch.
#pragma once

#include <hs/hs.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/result.hpp"

namespace airlock::dlp::detail {

// Scanning entry points. Debian 12's Vectorscan 5.4.9 is a "fat" library that picks code for the
// CPU at load time, and its AVX-512 code misses matches (a 26-byte email in an 80-byte sentence,
// for one; upstream issues VectorCamp/vectorscan#304, #378). On CPUs with AVX-512 these wrappers
// call the library's AVX2 entry points instead, which it exports, and compile_database() builds
// databases for AVX2; elsewhere the usual entry points and the host platform.
hs_error_t scan(const hs_database_t* db, const char* data, unsigned length, hs_scratch_t* scratch,
                match_event_handler on_match, void* context);
hs_error_t open_stream(const hs_database_t* db, hs_stream_t** stream);
hs_error_t scan_stream(hs_stream_t* stream, const char* data, unsigned length, hs_scratch_t* scratch,
                       match_event_handler on_match, void* context);
hs_error_t close_stream(hs_stream_t* stream, hs_scratch_t* scratch, match_event_handler on_match,
                        void* context);
// "avx2 entry points (AVX-512 workaround)" or "default entry points".
const char* scan_dispatch();

struct DatabaseDeleter {
  void operator()(hs_database_t* db) const { hs_free_database(db); }
};
struct ScratchDeleter {
  void operator()(hs_scratch_t* scratch) const { hs_free_scratch(scratch); }
};
struct StreamCloser {
  void operator()(hs_stream_t* stream) const { close_stream(stream, nullptr, nullptr, nullptr); }
};
using Database = std::unique_ptr<hs_database_t, DatabaseDeleter>;
using Scratch = std::unique_ptr<hs_scratch_t, ScratchDeleter>;
using Stream = std::unique_ptr<hs_stream_t, StreamCloser>;

struct PatternSpec {
  std::string expression;
  unsigned id = 0;
  unsigned flags = 0;
};

// mode: HS_MODE_BLOCK or HS_MODE_STREAM.
Result<Database> compile_database(const std::vector<PatternSpec>& patterns, unsigned mode);

// The longest match a pattern can produce (0 if unbounded or invalid).
unsigned max_match_width(const std::string& expression, unsigned flags);

// Scratch space sized for a set of databases; scans borrow one and give it back.
class ScratchPool {
 public:
  ScratchPool() = default;
  Status grow_for(const hs_database_t* database);  // call before any acquire()

  class Lease {
   public:
    Lease(ScratchPool& pool, Scratch scratch) : pool_(&pool), scratch_(std::move(scratch)) {}
    Lease(Lease&&) = default;
    Lease& operator=(Lease&&) = delete;
    ~Lease() {
      if (scratch_) pool_->release(std::move(scratch_));
    }
    hs_scratch_t* get() const { return scratch_.get(); }

   private:
    ScratchPool* pool_;
    Scratch scratch_;
  };
  Lease acquire();

 private:
  void release(Scratch scratch);
  std::mutex mutex_;
  Scratch prototype_;
  std::vector<Scratch> free_;
};

}  // namespace airlock::dlp::detail
