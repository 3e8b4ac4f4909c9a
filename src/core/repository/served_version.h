// How the repository hands model versions out: each loaded ModelVersion is wrapped in a holder
// that also owns what the version needs on disk (a load API's temporary directory). Requests and
// the serving table share the holder through an aliasing shared_ptr<ModelVersion>; when the last
// one lets go (possibly on an executor thread of that very version), the holder marks the
// version released and hands the model to the Reaper, whose own thread destroys it (joining its
// executors) and then removes the temporary directory.
//
// Thread-safety: Reaper::Dispose may be called from any thread; Shutdown once, by the owner.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "common/thread_annotations.h"
#include "core/model/model_version.h"
#include "core/repository/load_override.h"

namespace nereid {

class Reaper {
 public:
  Reaper();
  ~Reaper();  // Shutdown()
  // Destroys the items in order on the reaper thread (inline after Shutdown).
  void Dispose(std::vector<std::shared_ptr<const void>>&& items) EXCLUDES(mu_);
  // Destroys everything queued, then joins the thread.
  void Shutdown() EXCLUDES(mu_);

 private:
  void Loop() EXCLUDES(mu_);

  Mutex mu_;
  std::condition_variable cv_;
  std::deque<std::vector<std::shared_ptr<const void>>> queue_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

struct ServedHandle {
  std::shared_ptr<ModelVersion> model;          // aliases the holder
  std::shared_ptr<std::atomic<bool>> released;  // true once every reference is gone
};

// Wraps `model` (and the directory it was loaded from, may be null) for serving.
ServedHandle MakeServed(std::shared_ptr<ModelVersion> model, std::shared_ptr<TempModelDir> dir,
                        std::shared_ptr<Reaper> reaper);

}  // namespace nereid
