// EnsembleRun: the data flow of one ensemble request. It holds the ensemble tensors produced so
// far and dispatches each step as soon as every tensor it reads exists, so independent branches
// run at the same time. It never waits: every step's completion callback (on whatever thread the
// composing model answers) records the step's outputs and dispatches the steps they complete; the
// last completion finishes the request.
//
// Only the steps needed for the wanted outputs run (pruning). The first failing step wins: its
// error, prefixed "in ensemble 'E', ", is the request's, no new step starts after it, and the
// request finishes once the steps still in flight are done. When nothing is in flight and a
// wanted output was never produced, the request fails with Triton's "unexpected deadlock" error.
//
// Tensors are shared, not copied: a value is a view plus the owner that keeps its bytes alive
// (the ensemble request for its inputs, a step's response for that step's outputs), so one step's
// output is the next step's input as it is.
//
// The run does not know what a step is: `dispatch` runs one (ensemble_scheduler.cc sends it to the
// composing model's scheduler; tests answer from a table, on the calling thread or later).
//
// Thread-safety: steps may complete on any threads concurrently.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/thread_annotations.h"
#include "core/ensemble/ensemble_plan.h"
#include "core/tensor/shape.h"
#include "nereid/data_type.h"
#include "nereid/status.h"

namespace nereid {

struct EnsembleTensorValue {
  DataType data_type = DataType::kInvalid;
  Shape shape;
  std::span<const char> data;
  std::shared_ptr<const void> owner;  // keeps `data` alive
};

// A step's tensors by composing-model tensor name.
using NamedTensors = std::vector<std::pair<std::string, EnsembleTensorValue>>;
using StepDone = std::function<void(StatusOr<NamedTensors>)>;
// Runs step `step` on `inputs`; `done` is called exactly once, on any thread, possibly before
// dispatch returns.
using StepDispatcher = std::function<void(size_t step, NamedTensors inputs, StepDone done)>;
// The wanted outputs (tensor index, value), in the order they were wanted, or the error.
using EnsembleResult = std::vector<std::pair<size_t, EnsembleTensorValue>>;
using EnsembleDone = std::function<void(StatusOr<EnsembleResult>)>;

class EnsembleRun : public std::enable_shared_from_this<EnsembleRun> {
 public:
  // Starts the run: `inputs` are (tensor index, value) of the ensemble's inputs, `wanted` the
  // tensor indexes to answer with. `plan` outlives the run. `done` is called exactly once.
  static void Start(const EnsemblePlan* plan,
                    std::vector<std::pair<size_t, EnsembleTensorValue>> inputs,
                    std::vector<size_t> wanted, StepDispatcher dispatch, EnsembleDone done);

  EnsembleRun(const EnsemblePlan* plan, std::vector<size_t> wanted, StepDispatcher dispatch,
              EnsembleDone done);

 private:
  // Records `t` and appends the steps it completes to `ready`.
  void SetTensorLocked(size_t t, EnsembleTensorValue value, std::vector<size_t>* ready)
      REQUIRES(mu_);
  void Dispatch(const std::vector<size_t>& steps) EXCLUDES(mu_);
  void OnStepDone(size_t step, StatusOr<NamedTensors> result) EXCLUDES(mu_);
  void Finish() EXCLUDES(mu_);

  const EnsemblePlan* const plan_;
  const std::vector<size_t> wanted_;
  const StepDispatcher dispatch_;
  EnsembleDone done_;  // called once, by Finish
  const std::vector<bool> needed_;

  Mutex mu_;
  std::vector<std::optional<EnsembleTensorValue>> values_ GUARDED_BY(mu_);
  std::vector<size_t> missing_ GUARDED_BY(mu_);  // per step: distinct inputs not yet produced
  size_t inflight_ GUARDED_BY(mu_) = 0;
  Status error_ GUARDED_BY(mu_);
  bool finished_ GUARDED_BY(mu_) = false;
};

// "in ensemble 'E', <message>", keeping the code.
Status InEnsemble(const std::string& ensemble, const Status& status);

}  // namespace nereid
