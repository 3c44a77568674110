// Files: writes only under the policy's write roots, by literal path unless dynamic paths are
// allowed; literal reads only under the read roots.
//   file-write-outside-roots   a literal write path outside every write root
//   file-write-dynamic-path    a write whose path is not a literal
//   file-read-outside-roots    a literal read path outside every read root
#include "validate/rules/rules.hpp"

namespace airlock::validate::rules {
namespace {

// Lexically normalised absolute path (relative paths are relative to the work dir).
std::string normalize(const std::string& path, const std::string& workdir) {
  std::string full = !path.empty() && path.front() == '/' ? path : workdir + "/" + path;
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= full.size()) {
    auto end = full.find('/', start);
    if (end == std::string::npos) end = full.size();
    std::string part = full.substr(start, end - start);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    start = end + 1;
  }
  std::string out;
  for (const auto& p : parts) out += "/" + p;
  return out.empty() ? "/" : out;
}

bool under_any(const std::string& path, const std::vector<std::string>& roots,
               const std::string& workdir) {
  std::string normal = normalize(path, workdir);
  for (const auto& root : roots) {
    std::string r = normalize(root, workdir);
    if (r == "/" || normal == r || normal.rfind(r + "/", 0) == 0) return true;
  }
  return false;
}

enum class Access { read, write };

void check_path(const Node& at, const Node& path_node, Access access, std::string_view how,
                Analysis& analysis) {
  const Policy& policy = analysis.policy();
  auto path = analysis.literal_path(path_node);
  if (!path) {
    if (access == Access::write && !policy.allow_dynamic_paths)
      analysis.report(at, "file-write-dynamic-path",
                      std::string(how) + " writes to a path that is not a literal; the policy "
                                         "does not allow dynamic write paths");
    return;
  }
  if (path->find('\0') != std::string::npos) return;  // Python raises ValueError
  if (access == Access::write && !under_any(*path, policy.write_roots, policy.workdir))
    analysis.report(at, "file-write-outside-roots",
                    std::string(how) + " writes " + normalize(*path, policy.workdir) +
                        ", outside the allowed write roots");
  if (access == Access::read && !under_any(*path, policy.read_roots, policy.workdir) &&
      !under_any(*path, policy.write_roots, policy.workdir))
    analysis.report(at, "file-read-outside-roots",
                    std::string(how) + " reads " + normalize(*path, policy.workdir) +
                        ", outside the allowed read roots");
}

bool mode_writes(const Node& mode, Analysis& analysis) {
  if (!mode) return false;
  auto text = analysis.literal_string(mode);
  if (!text) return true;  // a computed mode may write
  return text->find_first_of("wax+") != std::string::npos;
}

struct PathFunction {
  std::string_view name;
  Access access;
  std::vector<std::size_t> path_arguments;  // positional indexes of paths
  std::string_view keyword = {};            // keyword of the first path argument
};

const std::vector<PathFunction>& path_functions() {
  static const std::vector<PathFunction> kTable = {
      {"os.remove", Access::write, {0}, "path"}, {"os.unlink", Access::write, {0}, "path"},
      {"os.rmdir", Access::write, {0}, "path"}, {"os.removedirs", Access::write, {0}, "name"},
      {"os.mkdir", Access::write, {0}, "path"}, {"os.makedirs", Access::write, {0}, "name"},
      {"os.rename", Access::write, {0, 1}}, {"os.renames", Access::write, {0, 1}},
      {"os.replace", Access::write, {0, 1}}, {"os.chmod", Access::write, {0}, "path"},
      {"os.lchmod", Access::write, {0}, "path"}, {"os.chown", Access::write, {0}, "path"},
      {"os.lchown", Access::write, {0}, "path"}, {"os.chflags", Access::write, {0}, "path"},
      {"os.link", Access::write, {0, 1}}, {"os.symlink", Access::write, {0, 1}},
      {"os.truncate", Access::write, {0}, "path"}, {"os.mkfifo", Access::write, {0}, "path"},
      {"os.mknod", Access::write, {0}, "path"}, {"os.utime", Access::write, {0}, "path"},
      {"os.setxattr", Access::write, {0}, "path"}, {"os.removexattr", Access::write, {0}, "path"},
      {"os.open", Access::write, {0}, "path"}, {"os.chdir", Access::write, {0}, "path"},
      {"os.chroot", Access::write, {0}, "path"},
      {"os.listdir", Access::read, {0}, "path"}, {"os.scandir", Access::read, {0}, "path"},
      {"os.walk", Access::read, {0}, "top"}, {"os.stat", Access::read, {0}, "path"},
      {"os.lstat", Access::read, {0}, "path"}, {"os.readlink", Access::read, {0}, "path"},
      {"shutil.copy", Access::write, {1}, "dst"}, {"shutil.copy2", Access::write, {1}, "dst"},
      {"shutil.copyfile", Access::write, {1}, "dst"},
      {"shutil.copymode", Access::write, {1}, "dst"},
      {"shutil.copystat", Access::write, {1}, "dst"},
      {"shutil.copytree", Access::write, {1}, "dst"},
      {"shutil.move", Access::write, {0, 1}}, {"shutil.rmtree", Access::write, {0}, "path"},
      {"shutil.chown", Access::write, {0}, "path"},
      {"shutil.make_archive", Access::write, {0}, "base_name"},
      {"shutil.unpack_archive", Access::write, {1}, "extract_dir"},
  };
  return kTable;
}

void check_open(const Node& call, std::string_view how, Analysis& analysis) {
  auto path = Analysis::argument(call, 0, "file");
  auto mode = Analysis::argument(call, 1, "mode");
  if (Analysis::has_starred_arguments(call)) {
    analysis.report(call, "file-write-dynamic-path",
                    std::string(how) + " with unpacked arguments: the path and mode cannot be seen");
    return;
  }
  check_path(call, path, mode_writes(mode, analysis) ? Access::write : Access::read, how, analysis);
}

void check_known_functions(const Node& call, Analysis& analysis) {
  for (const auto& r : analysis.resolve(call.child("func"))) {
    if (r.name == "builtins.open" || r.name == "io.open" || r.name == "codecs.open") {
      check_open(call, r.spelled, analysis);
      return;
    }
    for (const auto& fn : path_functions()) {
      if (r.name != fn.name) continue;
      if (Analysis::has_starred_arguments(call)) {
        if (fn.access == Access::write)
          analysis.report(call, "file-write-dynamic-path",
                          r.spelled + " with unpacked arguments: the path cannot be seen");
        return;
      }
      bool first = true;
      for (std::size_t index : fn.path_arguments) {
        auto path = Analysis::argument(call, index, first ? fn.keyword : std::string_view());
        first = false;
        if (!path) {
          // shutil.unpack_archive without extract_dir writes to the work dir.
          continue;
        }
        check_path(call, path, fn.access, r.spelled, analysis);
      }
      return;
    }
  }
}

// pathlib methods on a path object: only the unambiguous names are checked on any receiver;
// rename/replace/open only on receivers that are recognisably paths.
void check_path_methods(const Node& call, Analysis& analysis) {
  auto func = call.child("func");
  if (!func.is("Attribute")) return;
  auto method = func.text("attr");
  auto receiver = func.child("value");
  static const std::set<std::string, std::less<>> kWrites = {
      "write_text", "write_bytes", "touch", "mkdir", "rmdir", "unlink", "chmod", "lchmod",
      "symlink_to", "hardlink_to", "link_to"};
  static const std::set<std::string, std::less<>> kReads = {"read_text", "read_bytes"};
  bool path_receiver = analysis.literal_path(receiver).has_value() &&
                       !receiver.is_string_constant() && !receiver.is("JoinedStr");
  std::string how = "." + std::string(method) + "()";
  if (kWrites.count(method) > 0) {
    // A module's function of that name (os.mkdir) is checked as a function.
    for (const auto& r : analysis.resolve(receiver))
      if (r.kind != Resolved::Kind::object) return;
    check_path(call, receiver, Access::write, how, analysis);
  } else if (kReads.count(method) > 0 && path_receiver) {
    check_path(call, receiver, Access::read, how, analysis);
  } else if ((method == "rename" || method == "replace") && path_receiver) {
    check_path(call, receiver, Access::write, how, analysis);
    check_path(call, Analysis::argument(call, 0, "target"), Access::write, how, analysis);
  } else if (method == "open" && path_receiver) {
    auto mode = Analysis::argument(call, 0, "mode");
    check_path(call, receiver, mode_writes(mode, analysis) ? Access::write : Access::read, how,
               analysis);
  }
}

// TarFile/ZipFile .extract/.extractall: the destination must be a write root, and tar
// extraction needs filter="data" (member names like ../../x and links escape the destination).
void check_archive_extraction(const Node& call, Analysis& analysis) {
  auto func = call.child("func");
  if (!func.is("Attribute")) return;
  auto method = func.text("attr");
  if (method != "extractall" && method != "extract") return;
  auto destination = Analysis::argument(call, method == "extractall" ? 0 : 1, "path");
  if (destination) check_path(call, destination, Access::write, "." + std::string(method) + "()", analysis);
  if (analysis.program_imports("tarfile")) {
    auto filter = Analysis::argument(call, 99, "filter");
    auto text = analysis.literal_string(filter);
    if (!text || (*text != "data" && *text != "tar"))
      analysis.report(call, "file-write-outside-roots",
                      "." + std::string(method) + "() of a tar archive without filter=\"data\": "
                      "member names and links can write outside the destination");
  }
}

}  // namespace

void check_files(const Node& node, Analysis& analysis) {
  if (!node.is("Call")) return;
  check_known_functions(node, analysis);
  check_path_methods(node, analysis);
  check_archive_extraction(node, analysis);
}

}  // namespace airlock::validate::rules
