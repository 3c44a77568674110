// What several benchmarks share: the p50/p99 of a run's iterations, a timed loop, a command
// spawned and waited for, and bwrap with the same view of the host as airlock's default profile.
#pragma once

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

extern char** environ;

namespace airlock::bench {

using Argv = std::vector<std::string>;

// Counters p50_ms and p99_ms of the iterations' wall times.
inline void report(benchmark::State& state, std::vector<double>& ms) {
  std::sort(ms.begin(), ms.end());
  state.counters["p50_ms"] = ms[ms.size() / 2];
  state.counters["p99_ms"] = ms[std::min(ms.size() - 1, ms.size() * 99 / 100)];
}

// Times `once` per iteration (manual time) and reports the percentiles.
template <typename F>
void measure(benchmark::State& state, F once) {
  std::vector<double> ms;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    once();
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    state.SetIterationTime(took.count());
    ms.push_back(took.count() * 1000);
  }
  report(state, ms);
}

// Runs `argv` (stdout to /dev/null) and waits; aborts unless it exits 0.
inline void spawn_and_wait(const Argv& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  if (posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ) != 0) std::abort();
  posix_spawn_file_actions_destroy(&actions);
  int status;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) std::abort();
}

// bwrap with the same view of the host as airlock's default profile, running `cmd`.
inline Argv bwrap(const Argv& cmd) {
  Argv a = {"/usr/bin/bwrap", "--unshare-all", "--die-with-parent", "--new-session",
            "--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin",
            "--ro-bind", "/usr", "/usr"};
  for (const char* link : {"bin", "sbin", "lib", "lib64", "lib32", "libx32"}) {
    std::string host = std::string("/") + link;
    struct stat st {};
    if (lstat(host.c_str(), &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      char target[256] = {};
      if (readlink(host.c_str(), target, sizeof target - 1) > 0)
        a.insert(a.end(), {"--symlink", target, host});
    } else {
      a.insert(a.end(), {"--ro-bind", host, host});
    }
  }
  for (const char* file : {"/etc/ld.so.cache", "/etc/alternatives", "/etc/ssl/certs"})
    a.insert(a.end(), {"--ro-bind", file, file});
  a.insert(a.end(), {"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/work",
                     "--chdir", "/work"});
  a.insert(a.end(), cmd.begin(), cmd.end());
  return a;
}

}  // namespace airlock::bench
