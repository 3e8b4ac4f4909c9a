// LogThrottle: lets one event in per interval be logged and counts the ones held back, so a
// failure that repeats (e.g. accept() out of file descriptors) leaves one line per interval with
// the number of repeats instead of flooding the log.
//
// Thread-safety: none; use it from one thread or strand (callers own the synchronisation).
#pragma once

#include <chrono>
#include <cstdint>

namespace nereid {

class LogThrottle {
 public:
  using Clock = std::chrono::steady_clock;

  explicit LogThrottle(Clock::duration interval) : interval_(interval) {}

  // Call on every event. Returns 0 when the event should not be logged; otherwise the number of
  // events it stands for (itself plus those held back since the last logged one).
  uint64_t Allow(Clock::time_point now) {
    ++held_;
    if (logged_once_ && now - last_ < interval_) return 0;
    logged_once_ = true;
    last_ = now;
    const uint64_t n = held_;
    held_ = 0;
    return n;
  }

 private:
  Clock::duration interval_;
  Clock::time_point last_{};
  bool logged_once_ = false;
  uint64_t held_ = 0;
};

}  // namespace nereid
