#include "sandbox/host_stat.hpp"

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

namespace airlock::sandbox {
namespace {

std::atomic<std::size_t> g_hung{0};

// What the lookup's thread and its caller share; whichever leaves last frees it.
struct Lookup {
  std::mutex mu;
  std::condition_variable answered;
  bool done = false;
  bool abandoned = false;  // the caller gave up: the thread uncounts itself when it ends
  HostStat result;
};

void look_up(const std::shared_ptr<Lookup>& lookup, const std::string& path) {
  HostStat r;
  if (::stat(path.c_str(), &r.st) != 0) r.err = errno;
  std::lock_guard lock(lookup->mu);
  lookup->result = r;
  lookup->done = true;
  if (lookup->abandoned) g_hung.fetch_sub(1);
  lookup->answered.notify_all();
}

}  // namespace

Result<HostStat> stat_within(const std::string& path, std::chrono::milliseconds timeout) {
  if (g_hung.load() >= kMaxHungLookups)
    return Error::make("setup_error", std::to_string(kMaxHungLookups) +
                                          " lookups of host paths still wait for their filesystems; " + path +
                                          " is not looked up until one of them answers");
  auto lookup = std::make_shared<Lookup>();
  try {
    std::thread([lookup, path] { look_up(lookup, path); }).detach();
  } catch (const std::system_error& e) {
    return Error::make("setup_error", "looking up " + path + ": no thread for it: " + e.what());
  }
  std::unique_lock lock(lookup->mu);
  if (lookup->answered.wait_for(lock, timeout, [&] { return lookup->done; })) return lookup->result;
  lookup->abandoned = true;
  g_hung.fetch_add(1);
  return Error::make("setup_error", path + " did not answer a lookup within " + std::to_string(timeout.count()) +
                                        " ms: its filesystem is not responding (a dead NFS server, a FUSE "
                                        "daemon that stopped answering?)");
}

std::size_t hung_lookups() { return g_hung.load(); }

}  // namespace airlock::sandbox
