// StepLimiter: the ensemble's `max_inflight_requests` back-pressure (REFERENCE-2 §7.3). One
// counter per step, shared by every request to the ensemble: a slot is taken just before a step is
// dispatched and freed when that step's FINAL response arrives. At the limit the dispatching
// thread waits (the client sees no error); a cancelled request stops waiting, and after
// `give_up_after` (Triton: 300 s) the wait is logged as Triton logs it and the step proceeds, so a
// cycle of waits never deadlocks. A limit of 0 means unlimited.
//
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <string>
#include <vector>

#include "common/thread_annotations.h"

namespace nereid {

class StepLimiter {
 public:
  StepLimiter(std::string ensemble, size_t steps, uint32_t limit,
              std::chrono::nanoseconds give_up_after = std::chrono::seconds(300));

  // Takes a slot of `step`, waiting while the step is at its limit unless `cancelled()` turns
  // true (checked every few milliseconds) or `give_up_after` passes. Always takes the slot.
  void Acquire(size_t step, const std::function<bool()>& cancelled) EXCLUDES(mu_);
  void Release(size_t step) EXCLUDES(mu_);
  size_t Inflight(size_t step) const EXCLUDES(mu_);
  uint32_t limit() const { return limit_; }

 private:
  const std::string ensemble_;
  const uint32_t limit_;
  const std::chrono::nanoseconds give_up_after_;
  mutable Mutex mu_;
  std::condition_variable freed_;
  std::vector<size_t> inflight_ GUARDED_BY(mu_);
};

}  // namespace nereid
