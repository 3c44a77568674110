// Finds a tool's program the way its sandbox will, at load: a config naming a program the
// sandbox cannot run is refused then, not at the first call.
#pragma once

#include <string>
#include <vector>

#include "common/result.hpp"

namespace airlock::policy {

// `program` is argv[0]; `data_paths` are the tool's read-only binds (host path = sandbox
// path); `path_env` the PATH the sandbox gets. Returns the host file it resolves to, or an
// error naming where it was looked for.
Result<std::string> find_program_for_sandbox(const std::string& program,
                                             const std::vector<std::string>& data_paths,
                                             const std::string& path_env);

}  // namespace airlock::policy
