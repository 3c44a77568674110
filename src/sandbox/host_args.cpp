#include "sandbox/host_args.hpp"

#include <cstring>

namespace airlock::sandbox {
namespace {

// The area [begin, begin + size): the argument strings, then the environment strings, which
// the kernel lays out back to back on the initial stack (mm->arg_start .. env_end).
char* g_begin = nullptr;
std::size_t g_size = 0;

// Follows strings while each starts where the previous ended, so nothing outside the
// kernel's area is ever counted (e.g. an environment entry that setenv() replaced).
bool follow_contiguous(char* const* strings, char*& end) {
  for (; *strings != nullptr; ++strings) {
    if (*strings != end) return false;
    end += std::strlen(*strings) + 1;
  }
  return true;
}

// glibc calls .init_array entries with main's arguments, in static and dynamic programs
// alike: the bounds are recorded once at start, before anything could change argv, and
// without reading /proc. (glibc's __libc_argv is not exported; program_invocation_name
// gives argv[0] but not where the area ends.)
void record_host_command_line(int argc, char** argv, char** envp) {
  if (argc < 1 || argv == nullptr || argv[0] == nullptr) return;
  char* end = argv[0];
  if (follow_contiguous(argv, end) && envp != nullptr) (void)follow_contiguous(envp, end);
  g_begin = argv[0];
  g_size = static_cast<std::size_t>(end - argv[0]);
}

[[gnu::section(".init_array"), gnu::used]] void (*record_at_start)(
    int, char**, char**) = record_host_command_line;

}  // namespace

void blank_host_command_line() {
  if (g_size == 0) return;
  // The kernel shows arg_start..arg_end as it is while the byte before arg_end is NUL (it is
  // here): "airlock-init" and NULs, so `ps` inside names pid 1 by what it is.
  static constexpr char kName[] = "airlock-init";
  std::memset(g_begin, 0, g_size);
  if (g_size > sizeof kName) std::memcpy(g_begin, kName, sizeof kName - 1);
}

std::size_t host_command_line_bytes() { return g_size; }

}  // namespace airlock::sandbox
