// EnsembleRun: the data flow of one ensemble request. It holds the ensemble tensors produced so
// far and dispatches each step as soon as every tensor it reads exists, so independent branches
// run at the same time. It never waits: every step's completion callback (on whatever thread the
// composing model answers) records the step's outputs and dispatches the steps they complete; the
// last completion finishes the request.
//
// Decoupled steps (REFERENCE-2 §7.3): every response of a step before its FINAL one starts a new
// "flow", a copy of the tensors of the flow the step ran in plus that response's outputs, in which
// the downstream steps run again (fan-out); a FINAL response with outputs after such responses
// starts one too, a FINAL without any earlier response fills its own flow as a one-response step
// does. A flow inherits the outputs its parent's steps that were already running when it was
// forked produce later. With `partial` set (a decoupled ensemble), every flow whose wanted outputs
// are all set is one response, handed to `partial`; `done` then ends the request with an empty
// result (flags-only FINAL) or the error. Responses and the end are delivered one at a time, in
// the order they were produced, never concurrently.
//
// Only the steps needed for the wanted outputs run (pruning). The first failing step (or error
// response) wins: its error, prefixed "in ensemble 'E', ", is the request's, no new step starts
// after it, and the request finishes once the steps still in flight are done. Without `partial`,
// when nothing is in flight and a wanted output was never produced, the request fails with
// Triton's "unexpected deadlock" error.
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
#include <deque>
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
// A decoupled step's responses before its FINAL one (an error one fails the request).
using StepPartial = std::function<void(StatusOr<NamedTensors>)>;
// Runs step `step` on `inputs`; `partial` is called for each response before the last, in order;
// `done` exactly once, with the last (FINAL) response, on any thread, possibly before dispatch
// returns.
using StepDispatcher =
    std::function<void(size_t step, NamedTensors inputs, StepPartial partial, StepDone done)>;
// The wanted outputs (tensor index, value), in the order they were wanted, or the error.
using EnsembleResult = std::vector<std::pair<size_t, EnsembleTensorValue>>;
using EnsembleDone = std::function<void(StatusOr<EnsembleResult>)>;
using EnsemblePartial = std::function<void(EnsembleResult)>;

class EnsembleRun : public std::enable_shared_from_this<EnsembleRun> {
 public:
  // Starts the run: `inputs` are (tensor index, value) of the ensemble's inputs, `wanted` the
  // tensor indexes to answer with. `plan` outlives the run. `done` is called exactly once;
  // `partial` (decoupled ensembles only, else null) once per complete flow before it.
  static void Start(const EnsemblePlan* plan,
                    std::vector<std::pair<size_t, EnsembleTensorValue>> inputs,
                    std::vector<size_t> wanted, StepDispatcher dispatch, EnsembleDone done,
                    EnsemblePartial partial = nullptr);

  EnsembleRun(const EnsemblePlan* plan, std::vector<size_t> wanted, StepDispatcher dispatch,
              EnsembleDone done, EnsemblePartial partial);

 private:
  // One set of tensors the steps run on; flow 0 starts from the ensemble's inputs.
  struct Flow {
    std::vector<std::optional<EnsembleTensorValue>> values;
    std::vector<size_t> missing;   // per step: distinct inputs not yet produced
    std::vector<bool> inherits;    // per step: its outputs in the parent flow also land here
    std::vector<size_t> children;  // flows forked from this one
    bool answered = false;
  };
  using Ready = std::vector<std::pair<size_t, size_t>>;  // (flow, step)
  struct Outgoing {
    bool final = false;
    StatusOr<EnsembleResult> result = EnsembleResult{};
  };

  // Records `t` in `flow` (and in the descendants that inherit it) and appends the steps it
  // completes to `ready`.
  void SetTensorLocked(size_t flow, size_t t, const EnsembleTensorValue& value, Ready* ready)
      REQUIRES(mu_);
  void SetOutputsLocked(size_t flow, size_t step, NamedTensors& outputs, Ready* ready)
      REQUIRES(mu_);
  // A new flow forked from `parent`, holding `step`'s response `outputs`.
  void ForkLocked(size_t parent, size_t step, NamedTensors& outputs, Ready* ready) REQUIRES(mu_);
  // Queues a response for every flow (from `flow` down) whose wanted outputs are all set.
  void AnswerLocked(size_t flow) REQUIRES(mu_);
  void Dispatch(const Ready& steps) EXCLUDES(mu_);
  void OnStepPartial(size_t flow, size_t step, StatusOr<NamedTensors> result) EXCLUDES(mu_);
  void OnStepDone(size_t flow, size_t step, bool forked, StatusOr<NamedTensors> result)
      EXCLUDES(mu_);
  // Ends the request: queues the FINAL outcome (decoupled) or calls `done` (not decoupled).
  void Finish() EXCLUDES(mu_);
  // Hands the queued responses out, one at a time, on whichever thread finds them.
  void Deliver() EXCLUDES(mu_);

  const EnsemblePlan* const plan_;
  const std::vector<size_t> wanted_;
  const StepDispatcher dispatch_;
  EnsembleDone done_;              // called once, by Finish or Deliver
  const EnsemblePartial partial_;  // null unless the ensemble is decoupled
  const std::vector<bool> needed_;

  Mutex mu_;
  std::vector<std::unique_ptr<Flow>> flows_ GUARDED_BY(mu_);
  size_t inflight_ GUARDED_BY(mu_) = 0;
  Status error_ GUARDED_BY(mu_);
  bool finished_ GUARDED_BY(mu_) = false;
  std::deque<Outgoing> outbox_ GUARDED_BY(mu_);
  bool delivering_ GUARDED_BY(mu_) = false;
};

// "in ensemble 'E', <message>", keeping the code.
Status InEnsemble(const std::string& ensemble, const Status& status);

}  // namespace nereid
