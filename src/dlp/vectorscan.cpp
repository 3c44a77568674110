#include "dlp/vectorscan.hpp"

#include <climits>
#include <cstdlib>

namespace airlock::dlp::detail {

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
                                   static_cast<unsigned>(expressions.size()), mode, nullptr,
                                   &database, &error);
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
