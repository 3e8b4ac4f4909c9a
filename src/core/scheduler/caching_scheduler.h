// CachingScheduler: the response cache in front of a model version's scheduler (REFERENCE-2
// §8.2). Enqueue looks the request up before it reaches the batcher's queue; a hit is answered at
// once with a response built for this request (its id, its requested outputs; the frontends
// then apply its binary/JSON and shared-memory choices). A miss goes to the wrapped scheduler and
// its response, if successful, is inserted. Statistics as seed 004: a hit counts in success,
// queue and cache_hit only; a miss adds its lookup + insert time to cache_miss and success.
//
// Thread-safety: as Scheduler.
#pragma once

#include <atomic>
#include <memory>

#include "core/cache/response_cache.h"
#include "core/model/model_info.h"
#include "core/scheduler/scheduler.h"
#include "core/stats/model_stats.h"

namespace nereid {

class CachingScheduler : public Scheduler {
 public:
  // `info` and `stats` outlive the scheduler.
  CachingScheduler(const ModelInfo* info, ModelStats* stats, std::shared_ptr<ResponseCache> cache,
                   std::unique_ptr<Scheduler> inner);

  void Enqueue(SchedulerJob&& job, bool allow_inline) override;
  void Stop() override { inner_->Stop(); }
  bool IsExecutorThread() const override { return inner_->IsExecutorThread(); }

 private:
  const ModelInfo* info_;
  ModelStats* stats_;
  std::shared_ptr<ResponseCache> cache_;
  std::unique_ptr<Scheduler> inner_;
};

}  // namespace nereid
