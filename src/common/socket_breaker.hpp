// Lets another thread break a blocking exchange on a socket (a Kubernetes watch, a request
// forwarded to another replica): it shuts the socket down, so a read or write blocked on it
// returns with an error; whoever owns the socket closes it.
#pragma once

#include <atomic>

namespace airlock {

class SocketBreaker {
 public:
  void attach(int fd);  // a break that came first shuts it down at once
  void detach();
  void break_now();
  bool broken() const { return broken_.load(); }

 private:
  std::atomic<int> fd_{-1};
  std::atomic<bool> broken_{false};
};

}  // namespace airlock
