// The unload notice of one Python model (backend API v6 Model::Unloading), as its instances see
// it: a flag, and the wake-ups of the instances' watcher threads, which then end the decoupled
// requests still held (docs/python_backend.md).
//
// Thread-safety: every member may be called from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <map>

#include "common/thread_annotations.h"

namespace nereid::backends::python {

class UnloadSignal {
 public:
  bool unloading() const { return unloading_.load(std::memory_order_acquire); }
  // Registers an instance's wake-up (it must not block: it runs under this object's lock, so
  // that Remove() returning means it no longer runs). Returns its id for Remove.
  int Add(std::function<void()> wake);
  void Remove(int id);
  // Sets the flag and runs every wake-up registered now or later (Add after Notify wakes at once).
  void Notify();

 private:
  std::atomic<bool> unloading_{false};
  Mutex mu_;
  std::map<int, std::function<void()>> wakes_ GUARDED_BY(mu_);
  int next_id_ GUARDED_BY(mu_) = 0;
};

}  // namespace nereid::backends::python
