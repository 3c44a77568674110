// The init of a session sandbox (Spec::session_control_fd): serves exec requests on
// kChildInheritedFd (session_protocol.hpp) until the supervisor closes it. Called by
// child_main in place of starting a program, after every layer is in place.
#pragma once

#include "sandbox/child.hpp"

namespace airlock::sandbox {

[[noreturn]] void serve_session(const ChildPlan& plan);

}  // namespace airlock::sandbox
