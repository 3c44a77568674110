#include "dlp/vectorscan/vectorscan.hpp"

#include <climits>
#include <cstdlib>

// The per-architecture entry points of Vectorscan's fat runtime (absent from other builds).
extern "C" {
hs_error_t avx2_hs_scan(const hs_database_t*, const char*, unsigned, unsigned, hs_scratch_t*,
                        match_event_handler, void*) __attribute__((weak));
hs_error_t avx2_hs_open_stream(const hs_database_t*, unsigned, hs_stream_t**) __attribute__((weak));
hs_error_t avx2_hs_scan_stream(hs_stream_t*, const char*, unsigned, unsigned, hs_scratch_t*,
                               match_event_handler, void*) __attribute__((weak));
hs_error_t avx2_hs_close_stream(hs_stream_t*, hs_scratch_t*, match_event_handler, void*)
    __attribute__((weak));
}

namespace airlock::dlp::detail {
namespace {

struct EntryPoints {
  decltype(&hs_scan) scan = hs_scan;
  decltype(&hs_open_stream) open_stream = hs_open_stream;
  decltype(&hs_scan_stream) scan_stream = hs_scan_stream;
  decltype(&hs_close_stream) close_stream = hs_close_stream;
  bool avx2_workaround = false;
};

EntryPoints choose_entry_points() {
  EntryPoints e;
#if defined(__x86_64__)
  const bool have_avx2_entry_points =
      avx2_hs_scan && avx2_hs_open_stream && avx2_hs_scan_stream && avx2_hs_close_stream;
  if (have_avx2_entry_points && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2")) {
    e.scan = avx2_hs_scan;
    e.open_stream = avx2_hs_open_stream;
    e.scan_stream = avx2_hs_scan_stream;
    e.close_stream = avx2_hs_close_stream;
    e.avx2_workaround = true;
  }
#endif
  return e;
}

const EntryPoints& entry_points() {
  static const EntryPoints chosen = choose_entry_points();
  return chosen;
}

// Databases for the AVX2 entry points must be compiled for AVX2 (a database compiled for the
// host's AVX-512 uses engines the AVX2 code cannot run).
const hs_platform_info_t* compile_platform() {
  static hs_platform_info_t avx2{HS_TUNE_FAMILY_GENERIC, HS_CPU_FEATURES_AVX2, 0, 0};
  return entry_points().avx2_workaround ? &avx2 : nullptr;
}

}  // namespace

hs_error_t scan(const hs_database_t* db, const char* data, unsigned length, hs_scratch_t* scratch,
                match_event_handler on_match, void* context) {
  return entry_points().scan(db, data, length, 0, scratch, on_match, context);
}

hs_error_t open_stream(const hs_database_t* db, hs_stream_t** stream) {
  return entry_points().open_stream(db, 0, stream);
}

hs_error_t scan_stream(hs_stream_t* stream, const char* data, unsigned length, hs_scratch_t* scratch,
                       match_event_handler on_match, void* context) {
  return entry_points().scan_stream(stream, data, length, 0, scratch, on_match, context);
}

hs_error_t close_stream(hs_stream_t* stream, hs_scratch_t* scratch, match_event_handler on_match,
                        void* context) {
  return entry_points().close_stream(stream, scratch, on_match, context);
}

const char* scan_dispatch() {
  return entry_points().avx2_workaround ? "avx2 entry points (AVX-512 workaround)"
                                        : "default entry points";
}

Result<Database> compile_database(const std::vector<PatternSpec>& patterns, unsigned mode) {
  std::vector<const char*> expressions;
  std::vector<unsigned> ids, flags;
  for (const auto& p : patterns) {
    expressions.push_back(p.expression.c_str());
    ids.push_back(p.id);
    flags.push_back(p.flags);
  }
  hs_database_t* database = nullptr;
  hs_compile_error_t* error = nullptr;
  hs_error_t rc = hs_compile_multi(expressions.data(), flags.data(), ids.data(),
                                   static_cast<unsigned>(expressions.size()), mode,
                                   compile_platform(), &database, &error);
  if (rc != HS_SUCCESS) {
    std::string message = error ? error->message : "unknown error";
    std::string which = error && error->expression >= 0
                            ? " in pattern " + std::to_string(error->expression) + ": " +
                                  patterns[static_cast<std::size_t>(error->expression)].expression
                            : "";
    hs_free_compile_error(error);
    return Error::make("dlp_compile", "Vectorscan could not compile the detectors: " + message + which);
  }
  return Database(database);
}

unsigned max_match_width(const std::string& expression, unsigned flags) {
  hs_expr_info_t* info = nullptr;
  hs_compile_error_t* error = nullptr;
  if (hs_expression_info(expression.c_str(), flags, &info, &error) != HS_SUCCESS) {
    hs_free_compile_error(error);
    return 0;
  }
  unsigned width = info->max_width == UINT_MAX ? 0 : info->max_width;
  std::free(info);  // allocated by Vectorscan's default allocator (malloc)
  return width;
}

Status ScratchPool::grow_for(const hs_database_t* database) {
  hs_scratch_t* scratch = prototype_.release();
  if (hs_alloc_scratch(database, &scratch) != HS_SUCCESS)
    return Error::make("dlp_scratch", "Vectorscan could not allocate scratch space");
  prototype_.reset(scratch);
  return Status::success();
}

ScratchPool::Lease ScratchPool::acquire() {
  std::lock_guard lock(mutex_);
  if (!free_.empty()) {
    Scratch scratch = std::move(free_.back());
    free_.pop_back();
    return Lease(*this, std::move(scratch));
  }
  hs_scratch_t* clone = nullptr;
  if (hs_clone_scratch(prototype_.get(), &clone) != HS_SUCCESS) std::abort();  // out of memory
  return Lease(*this, Scratch(clone));
}

void ScratchPool::release(Scratch scratch) {
  std::lock_guard lock(mutex_);
  free_.push_back(std::move(scratch));
}

}  // namespace airlock::dlp::detail
