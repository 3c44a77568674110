#include "common/utc_time.hpp"

#include <cstdio>
#include <ctime>

namespace airlock {

std::string rfc3339_seconds(std::int64_t seconds_since_epoch) {
  const auto seconds = static_cast<std::time_t>(seconds_since_epoch);
  std::tm tm{};
  ::gmtime_r(&seconds, &tm);
  char text[40];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string rfc3339_ms(std::int64_t ms_since_epoch) {
  // Floor division: a time before 1970 still gets a millisecond part in 0-999.
  std::int64_t seconds = ms_since_epoch / 1000, millis = ms_since_epoch % 1000;
  if (millis < 0) {
    millis += 1000;
    seconds -= 1;
  }
  std::string text = rfc3339_seconds(seconds);
  char fraction[8];
  std::snprintf(fraction, sizeof fraction, ".%03dZ", static_cast<int>(millis));
  text.pop_back();  // the 'Z'
  return text + fraction;
}

std::int64_t unix_ms(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

std::int64_t unix_ms_now() { return unix_ms(std::chrono::system_clock::now()); }

std::string rfc3339_ms(std::chrono::system_clock::time_point t) {
  return rfc3339_ms(std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count());
}

}  // namespace airlock
