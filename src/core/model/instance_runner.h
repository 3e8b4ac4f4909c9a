// Runs one validated request on one backend instance: presents the inputs in the model's layout
// (reshape), collects the outputs into an InferenceResponse (mapping reshape back) and orders
// them as the request asked.
//
// Thread-safety: stateless; callers guarantee one Execute at a time per instance.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/model/decoupled_sender.h"
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
// `request_errors` (non-decoupled models: one per item, all OK on entry, or empty) is handed to the
// backend as ExecuteArgs::request_errors: a request it fails there has no rows in the outputs, and
// when every item failed the response has no outputs. A lone item's error (with `request_errors`
// empty the backend gets a span of one) is returned as the result.
// `release_flags` (one per item, kReleaseAll on entry; backend API v7) is handed to the backend
// when the caller can take a request back (iterative sequences): an item the backend reschedules
// has no rows in the outputs, and a lone rescheduled item's response has no outputs (its request
// is in it, as on success). Empty: the caller cannot, and a rescheduled item fails with
// RescheduleRefused() (alone through `request_errors` when the caller passed them, else the
// whole execution).
StatusOr<std::unique_ptr<InferenceResponse>> RunOnInstance(
    backend::ModelInstance& instance, const ModelInfo& model,
    std::unique_ptr<InferenceRequest> request, int64_t batch_size,
    std::span<const InferenceRequest* const> items, ExecutionTimes* times,
    std::span<const std::shared_ptr<backend::ResponseSender>> senders = {},
    std::span<Status> request_errors = {}, std::span<uint32_t> release_flags = {});

// Triton's error for a request a backend asked to reschedule (ExecuteArgs::release_flags) on a
// model that cannot take it back (anything but an iterative sequence batcher).
Status RescheduleRefused();

inline bool Rescheduled(std::span<const uint32_t> release_flags, size_t i) {
  return i < release_flags.size() && (release_flags[i] & backend::kReleaseReschedule) != 0;
}

// The durations an execution's `times` describe, as its responses report them.
inline ComputeDurations DurationsOf(const ExecutionTimes& times) {
  return {times.input_end - times.compute_start, times.output_start - times.input_end,
          times.compute_end - times.output_start, times.compute_start};
}

// Decoupled models (model_info.h `decoupled`): runs one request whose responses the backend sends
// through a DecoupledSender, which takes over the request and `done` (called exactly once, maybe
// after this returns, maybe on another thread). Returns what Execute returned (a failed Execute
// also ends the request with that error unless FINAL was sent).
// With `taken_back` (a caller that can take the request back: iterative sequences), a request the
// backend reschedules (ExecuteArgs::release_flags) comes back there with its callback and
// `progress` for its next execution (nullopt when it was not rescheduled or had sent FINAL);
// without, a rescheduled request ends with RescheduleRefused(). `progress` continues the
// responses of a request rescheduled before.
Status RunDecoupledOnInstance(backend::ModelInstance& instance, const ModelInfo& model,
                              std::unique_ptr<InferenceRequest> request, int64_t batch_size,
                              ModelStats* stats, InferCallback done, ExecutionTimes* times,
                              std::optional<DecoupledSender::TakenBack>* taken_back = nullptr,
                              ResponseProgress progress = {});

// After an execution of decoupled requests: each request the backend rescheduled goes back into
// `taken_back` (one entry per sender; null: the caller cannot take requests back, they end with
// RescheduleRefused()). Returns whether any request was rescheduled.
bool TakeBackRescheduled(std::span<const std::shared_ptr<DecoupledSender>> senders,
                         std::span<const uint32_t> release_flags,
                         std::vector<std::optional<DecoupledSender::TakenBack>>* taken_back);

}  // namespace nereid
