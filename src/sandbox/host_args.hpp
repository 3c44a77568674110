// The supervisor's own command line and environment strings, where the kernel put them at
// exec. The sandbox's pid 1 is a fork of the supervisor without an exec, so /proc/1/cmdline
// inside the sandbox reads this memory (a copy of it); the child blanks its copy.
#pragma once

#include <cstddef>

namespace airlock::sandbox {

// Overwrites the argument and environment strings with "airlock-init" and NULs, in this
// process's memory only. No allocation, no syscall (a page fault on the first write at most):
// the sandbox child calls it after clone3, which gave it its own copy of the supervisor's
// memory. Does nothing when the area was not found at start.
void blank_host_command_line();

// How many bytes blank_host_command_line() overwrites (0: none found); for tests.
std::size_t host_command_line_bytes();

}  // namespace airlock::sandbox
