// LoadErrorLog: the last few model load failures (model, wall-clock time, reason), newest last,
// for the status page's "recent load errors" (docs/operations.md). Bounded: once `capacity`
// failures are kept, each new one drops the oldest.
//
// Thread-safety: every method may be called from any thread concurrently (one leaf mutex; nothing
// is called under it).
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <string>
#include <vector>

#include "common/thread_annotations.h"

namespace nereid {

struct LoadError {
  std::string model;
  std::chrono::system_clock::time_point time;
  std::string reason;
};

class LoadErrorLog {
 public:
  static constexpr size_t kDefaultCapacity = 20;

  explicit LoadErrorLog(size_t capacity = kDefaultCapacity) : capacity_(capacity) {}

  void Record(std::string model, std::string reason,
              std::chrono::system_clock::time_point time = std::chrono::system_clock::now())
      EXCLUDES(mu_);
  std::vector<LoadError> Recent() const EXCLUDES(mu_);  // oldest first

 private:
  const size_t capacity_;
  mutable Mutex mu_;
  std::deque<LoadError> errors_ GUARDED_BY(mu_);
};

}  // namespace nereid
