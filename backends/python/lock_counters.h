// Counted scopes of a Python model instance (python_instance_internal.h): how many executions
// or reads of the stub are under way, and how many wait for the instance's lock; the watcher's
// reading of idle calls yields to the latter (PythonInstance::ReadRung).
//
// Thread-safety: the counters are atomics; each scope object belongs to one thread.
#pragma once

#include <atomic>

#include "common/thread_annotations.h"

namespace nereid::backends::python {

// Counts an execution or read of the stub under way (PythonInstance::busy_) for its scope.
class BusyScope {
 public:
  explicit BusyScope(std::atomic<int>& busy) : busy_(busy) { ++busy_; }
  ~BusyScope() { --busy_; }
  BusyScope(const BusyScope&) = delete;
  BusyScope& operator=(const BusyScope&) = delete;

 private:
  std::atomic<int>& busy_;
};

// MutexLock on the instance's lock, counted in `waiters` while it waits for it
// (PythonInstance::lock_waiters_, which ReadRung yields to). The count
// drops once the lock is held, also if taking it throws.
class SCOPED_CAPABILITY CountedLock {
 public:
  CountedLock(Mutex& mu, std::atomic<int>& waiters) ACQUIRE(mu) : mu_(mu) {
    const BusyScope waiting(waiters);
    mu_.Lock();
  }
  ~CountedLock() RELEASE() { mu_.Unlock(); }
  CountedLock(const CountedLock&) = delete;
  CountedLock& operator=(const CountedLock&) = delete;

 private:
  Mutex& mu_;
};

}  // namespace nereid::backends::python
