// How the repository hands model versions out: each loaded ModelVersion is wrapped in a holder
// that also owns what the version needs on disk (a load API's temporary directory). Requests and
// the serving table share the holder through an aliasing shared_ptr<ModelVersion>; when the last
// one lets go (possibly on an executor thread of that very version), the holder tells its owner
// (`on_released`, on that thread) and hands the model to the Reaper, whose own thread destroys it
// (joining its executors) and then removes the temporary directory.
//
// The Reaper is the only place a served version is destroyed, before and after shutdown: it
// counts the holders alive, and Shutdown waits until every one of them has handed its version
// over and the reaper thread has destroyed it, then joins that thread. So no version is ever
// destroyed on a thread of its own (which would join itself), and nothing outlives the reaper.
//
// Thread-safety: every method may be called from any thread; Shutdown once, by the owner, after
// which no new holder may be made.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <utility>

#include "common/thread_annotations.h"
#include "core/model/model_version.h"
#include "core/repository/load_override.h"

namespace nereid {

class Reaper {
 public:
  Reaper();
  ~Reaper();  // Shutdown()

  // One more owner (a holder) that will hand its items over with Dispose exactly once.
  void Adopt() EXCLUDES(mu_);
  // From an adopted owner: queues `first` and `then`, which the reaper thread destroys in that
  // order. Taken by value and moved along (never copied), so that when the caller held the last
  // reference, the reaper thread now does.
  void Dispose(std::shared_ptr<const void> first, std::shared_ptr<const void> then = nullptr)
      EXCLUDES(mu_);
  // Waits until every adopted owner has disposed (logging every few seconds while some are still
  // held), lets the reaper thread destroy everything queued, then joins it.
  void Shutdown() EXCLUDES(mu_);

  // Owners adopted and not yet disposed.
  size_t live() const EXCLUDES(mu_);
  // Whether the reaper thread is running (it starts with the first Dispose). For tests.
  bool thread_started() const EXCLUDES(mu_);

 private:
  void Loop() EXCLUDES(mu_);

  mutable Mutex mu_;
  std::condition_variable cv_;       // the reaper thread: queued, or stopping
  std::condition_variable idle_cv_;  // Shutdown: live_ reached 0
  std::deque<std::pair<std::shared_ptr<const void>, std::shared_ptr<const void>>> queue_
      GUARDED_BY(mu_);
  size_t live_ GUARDED_BY(mu_) = 0;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_ GUARDED_BY(mu_);  // started by the first Dispose
};

// Wraps `model` (and the directory it was loaded from, may be null) for serving. `on_released`
// (may be empty) runs once, on the thread that drops the last reference, before the model is
// handed to `reaper`; it must not be called with a lock held that it takes. `reaper` must outlive
// the returned pointer and every copy of it (Reaper::Shutdown waits for them).
std::shared_ptr<ModelVersion> MakeServed(std::shared_ptr<ModelVersion> model,
                                         std::shared_ptr<TempModelDir> dir, Reaper* reaper,
                                         std::function<void()> on_released);

}  // namespace nereid
