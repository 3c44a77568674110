#include "policy/program_lookup.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "sandbox/plan.hpp"

namespace airlock::policy {
namespace {

namespace fs = std::filesystem;

// "/data/" -> "/data": so that is_within compares whole names.
fs::path normal(const fs::path& p) {
  fs::path n = p.lexically_normal();
  return (!n.has_filename() && n != n.root_path()) ? n.parent_path() : n;
}

bool is_within(const fs::path& path, const fs::path& dir) {
  auto [d, p] = std::mismatch(dir.begin(), dir.end(), path.begin(), path.end());
  return d == dir.end();
}

bool within_any(const fs::path& path, const std::vector<fs::path>& dirs) {
  for (const auto& d : dirs)
    if (is_within(path, d)) return true;
  return false;
}

// What the sandbox shows of the host: the system roots and the tool's data paths, as
// written (where a program path must start) and resolved (where its symlinks must lead).
struct SandboxView {
  std::vector<fs::path> written, resolved;
};

SandboxView sandbox_view(const std::vector<std::string>& data_paths) {
  SandboxView view;
  auto roots = sandbox::system_read_only_roots();
  roots.insert(roots.end(), data_paths.begin(), data_paths.end());
  for (const auto& r : roots) {
    view.written.push_back(normal(r));
    std::error_code ec;
    auto real = fs::canonical(r, ec);
    if (!ec) view.resolved.push_back(real);
  }
  return view;
}

// Empty if the sandbox can execute `candidate`, else why not.
std::string why_not_runnable(const std::string& candidate, const SandboxView& view) {
  fs::path p = normal(candidate);
  if (!p.is_absolute()) return "a relative path (the sandbox's work dir starts empty)";
  if (!within_any(p, view.written)) return "outside what the sandbox sees";
  std::error_code ec;
  fs::path real = fs::canonical(p, ec);
  if (ec) return "does not exist";
  if (!within_any(real, view.resolved))
    return "leads to " + real.string() + ", outside the sandbox";
  struct stat st {};
  if (::stat(real.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "not a file";
  if ((st.st_mode & 0111) == 0) return "not executable";
  return "";
}

std::string seen_list(const SandboxView& view) {
  std::string out;
  for (const auto& w : view.written) out += (out.empty() ? "" : ", ") + w.string();
  return out;
}

}  // namespace

Result<std::string> find_program_for_sandbox(const std::string& program,
                                             const std::vector<std::string>& data_paths,
                                             const std::string& path_env) {
  const SandboxView view = sandbox_view(data_paths);
  const auto candidates = sandbox::exec_candidates(program, path_env);
  if (program.find('/') != std::string::npos) {
    std::string why = why_not_runnable(program, view);
    if (why.empty()) return program;
    return Error::make("config", "program '" + program + "' cannot run in the sandbox: " + why +
                                     " (the sandbox sees " + seen_list(view) + ")");
  }
  std::string tried;
  for (const auto& c : candidates) {
    if (why_not_runnable(c, view).empty()) return c;
    tried += (tried.empty() ? "" : ", ") + c;
  }
  return Error::make("config",
                     "program '" + program + "' is not on the sandbox's PATH (looked for " +
                         (tried.empty() ? "nothing: PATH has no absolute directory" : tried) + ")");
}

}  // namespace airlock::policy
