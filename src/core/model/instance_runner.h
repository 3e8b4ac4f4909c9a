// Runs one validated request on one backend instance: presents the inputs in the model's layout
// (reshape), collects the outputs into an InferenceResponse (mapping reshape back) and orders
// them as the request asked.
//
// Thread-safety: stateless; callers guarantee one Execute at a time per instance.
#pragma once

#include <memory>
#include <span>

#include "core/model/model_info.h"
#include "core/request/inference_request.h"
#include "core/stats/model_stats.h"
#include "nereid/backend_api.h"

namespace nereid {

// `batch_size` is what ValidateRequest returned. On success the response owns the outputs and
// takes over the request. `times` (required) receives when each phase ran, success or not.
StatusOr<std::unique_ptr<InferenceResponse>> RunOnInstance(
    backend::ModelInstance& instance, const ModelInfo& model,
    std::unique_ptr<InferenceRequest> request, int64_t batch_size, ExecutionTimes* times);

// The same for an execution made of several requests gathered into `request` (batch_runner.h):
// `items` are those requests in batch order (alive for the call). Models with ragged inputs,
// batch inputs or batch outputs need them (batch_io.h): ragged inputs are passed flat, batch
// inputs are added, and with a single item a batch output gets that item's shape (several items
// keep the model's shape; the caller scatters). `senders` (decoupled models: one per item) are
// handed to the backend; what it writes through the allocator still becomes the response.
StatusOr<std::unique_ptr<InferenceResponse>> RunOnInstance(
    backend::ModelInstance& instance, const ModelInfo& model,
    std::unique_ptr<InferenceRequest> request, int64_t batch_size,
    std::span<const InferenceRequest* const> items, ExecutionTimes* times,
    std::span<const std::shared_ptr<backend::ResponseSender>> senders = {});

// The durations an execution's `times` describe, as its responses report them.
inline ComputeDurations DurationsOf(const ExecutionTimes& times) {
  return {times.input_end - times.compute_start, times.output_start - times.input_end,
          times.compute_end - times.output_start, times.compute_start};
}

// Decoupled models (model_info.h `decoupled`): runs one request whose responses the backend sends
// through a DecoupledSender, which takes over the request and `done` (called exactly once, maybe
// after this returns, maybe on another thread). Returns what Execute returned (a failed Execute
// also ends the request with that error unless FINAL was sent).
Status RunDecoupledOnInstance(backend::ModelInstance& instance, const ModelInfo& model,
                              std::unique_ptr<InferenceRequest> request, int64_t batch_size,
                              ModelStats* stats, InferCallback done, ExecutionTimes* times);

}  // namespace nereid
