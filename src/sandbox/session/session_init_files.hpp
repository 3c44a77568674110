// The session init's file operations (session_protocol.hpp, File): each path is resolved by
// the kernel inside the sandbox, beneath the work dir, at the moment of use. Reading and writing
// a file's bytes is done by a copier, a child of the init inside every layer of the sandbox
// (its memory and its disk use are the session's), so the init itself never blocks on them.
// Syscalls and static memory only, as in the rest of the init.
#pragma once

#include <sys/types.h>

#include <cstddef>

#include "sandbox/session/session_protocol.hpp"

namespace airlock::sandbox::session_files {

// Opens the work dir, which every later path is resolved beneath. False when it cannot.
bool open_workspace(const char* workdir);

// Serves one File request: `message` holds its `size` bytes (it may be changed), `fds` the
// descriptors received with it (left open: the caller closes them). Returns the Done reply;
// `*copier` is the copier's pid when one was started (read, write), else 0. `stack_top`: a
// stack the copier may start on (it has a copy of the init's memory).
session_protocol::Reply serve(char* message, std::size_t size, const int* fds, std::size_t nfds,
                              char* stack_top, pid_t* copier);

}  // namespace airlock::sandbox::session_files
