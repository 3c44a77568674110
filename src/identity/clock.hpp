// The wall clock the identity library reads, injectable so that tests need not sleep.
#pragma once

#include <chrono>
#include <functional>

namespace airlock::identity {

using Clock = std::function<std::chrono::system_clock::time_point()>;

inline Clock system_clock() {
  return [] { return std::chrono::system_clock::now(); };
}

}  // namespace airlock::identity
