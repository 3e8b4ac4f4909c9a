// EnsembleScheduler: the scheduler of a `platform: "ensemble"` model version. It runs each request
// as a data flow (ensemble_run.h) whose steps are ordinary requests to the composing models, sent
// through ModelVersion::Infer so that each goes through that model's own scheduler (its dynamic
// batcher batches ensemble steps with other traffic, its sequence batcher keeps their state).
//
// The composing version of a step is looked up when the step is dispatched, so a reload of a
// composing model is picked up by the next step; a step holds the version it runs on until it
// completes, so an unload never pulls a model from under it.
//
// Every step copies the ensemble request's id, parameters (priority, timeout, sequence id and
// flags, forwarded headers...) and cancellation tokens. Nothing blocks: each step's completion
// dispatches the next ones on the composing model's thread.
//
// Decoupled composing models (REFERENCE-2 §7.3): each response of a decoupled step feeds the steps
// after it as its own flow (ensemble_run.h) and each complete flow is one response of the
// ensemble, which is then decoupled itself (ensemble_loading.cc); a flags-only FINAL ends it.
// `max_inflight_requests` bounds the steps in flight per step across requests (step_limiter.h):
// at the limit the thread dispatching the step waits, which slows the producer feeding it.
//
// Thread-safety: Enqueue may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/ensemble/ensemble_plan.h"
#include "core/ensemble/step_limiter.h"
#include "core/model/model_info.h"
#include "core/scheduler/scheduler.h"
#include "core/stats/model_stats.h"

namespace nereid {

class ModelVersion;

// The version a step runs on: (model name, version or -1 for the latest ready one).
using ModelLookup =
    std::function<StatusOr<std::shared_ptr<ModelVersion>>(const std::string&, int64_t)>;

class EnsembleScheduler : public Scheduler {
 public:
  // `info` and `stats` outlive the scheduler (they are its model version's).
  EnsembleScheduler(const ModelInfo* info, ModelStats* stats, EnsemblePlan plan,
                    ModelLookup lookup);

  void Enqueue(SchedulerJob&& job, bool allow_inline) override;
  void Stop() override {}  // requests in flight hold the version, so none is left when it stops
  bool IsExecutorThread() const override { return false; }

 private:
  const ModelInfo* const info_;
  ModelStats* const stats_;
  const EnsemblePlan plan_;
  const ModelLookup lookup_;
  StepLimiter limiter_;
};

}  // namespace nereid
