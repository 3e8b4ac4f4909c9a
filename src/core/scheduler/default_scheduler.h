// DefaultScheduler: Triton's default scheduler. Requests run one at a time each, FIFO, on
// whichever instance is idle. One executor thread per instance pulls from a shared queue.
//
// Thread-safety: Enqueue may be called from any thread. Stop is called once, by the owner.
// Lock order: mu_ is a leaf; no backend call, callback or allocation-heavy work happens under it.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/model/model_info.h"
#include "core/request/inference_request.h"
#include "nereid/backend_api.h"

namespace nereid {

struct SchedulerJob {
  std::unique_ptr<InferenceRequest> request;
  int64_t batch_size = 0;
  InferCallback done;
};

class DefaultScheduler {
 public:
  // Takes the instances; `model` must outlive the scheduler.
  DefaultScheduler(const ModelInfo* model,
                   std::vector<std::unique_ptr<backend::ModelInstance>>&& instances);
  ~DefaultScheduler();  // Stop()s if needed

  void Enqueue(SchedulerJob&& job);
  // Runs every job already queued, then joins the executors and destroys the instances.
  // Must not be called from an executor thread (see IsExecutorThread).
  void Stop();
  bool IsExecutorThread() const;

 private:
  void ExecutorLoop(backend::ModelInstance* instance);

  const ModelInfo* model_;
  std::vector<std::unique_ptr<backend::ModelInstance>> instances_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<SchedulerJob> queue_;  // guarded by mu_
  bool stopping_ = false;           // guarded by mu_
};

}  // namespace nereid
