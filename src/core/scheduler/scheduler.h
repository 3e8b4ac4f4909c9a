// Scheduler: what a ModelVersion hands validated requests to. DefaultScheduler runs them one at a
// time each; DynamicBatchScheduler gathers them into batches.
//
// Thread-safety: Enqueue may be called from any thread. Stop is called once, by the owner.
#pragma once

#include <cstdint>
#include <memory>

#include "core/request/inference_request.h"

namespace nereid {

struct SchedulerJob {
  std::unique_ptr<InferenceRequest> request;
  int64_t batch_size = 0;
  InferCallback done;
  uint64_t request_start_ns = 0;  // NowNs() when the server accepted the request
  uint64_t queue_start_ns = 0;    // NowNs() when queued (Enqueue); 0 for an inline run
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  // Schedules `job`; with allow_inline it may run it on this thread before returning.
  virtual void Enqueue(SchedulerJob&& job, bool allow_inline) = 0;
  // Runs every job already queued, then joins the executors and destroys the instances.
  // Must not be called from an executor thread (see IsExecutorThread).
  virtual void Stop() = 0;
  virtual bool IsExecutorThread() const = 0;
};

}  // namespace nereid
