// Runs several validated requests of a batching model as one backend execution: gathers their
// inputs along the batch dimension (one copy of each input byte), executes once through
// RunOnInstance (so reshape and output selection behave as for one request), and splits every
// output back per request (one copy of each output byte). A single request runs as is, with no
// copy at all.
//
// Thread-safety: stateless; callers guarantee one Execute at a time per instance.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/model/model_info.h"
#include "core/request/inference_request.h"
#include "core/stats/model_stats.h"
#include "nereid/backend_api.h"

namespace nereid {

// Requests with equal keys can be gathered into one batch: the same input names, data types and
// shapes after the batch dimension, except for the shapes of `model`'s ragged inputs
// (allow_ragged_batch; Triton batches those whatever their shapes). The key is exact (no hash
// collisions).
std::string BatchShapeKey(const InferenceRequest& request, const ModelInfo* model = nullptr);

// One request made of all `requests` (sharing one BatchShapeKey; `total` is the sum of their batch
// sizes): inputs concatenated along the batch dimension into one buffer the merged request keeps
// alive; outputs the union of what the requests asked for.
StatusOr<std::unique_ptr<InferenceRequest>> GatherRequests(
    const ModelInfo& model, std::span<const InferenceRequest* const> requests, int64_t total);

// Splits `all`, the outputs of one execution of the merged `requests`, into one response per
// request (in order, without its request): each gets its rows of the outputs it asked for, and
// batch outputs scattered by its shape of their source input. An output that does not split fails
// every request. `request_errors` (empty, or one per request): a request whose entry is an error
// gets that error and has no rows in `all` (backend_api.h ExecuteArgs::request_errors).
std::vector<StatusOr<std::unique_ptr<InferenceResponse>>> SplitBatchResponse(
    const ModelInfo& model, InferenceResponse& all,
    std::span<const InferenceRequest* const> requests, const std::vector<int64_t>& batch_sizes,
    std::span<const Status> request_errors = {});

// `requests` share one BatchShapeKey; `batch_sizes[i]` is what ValidateRequest returned for
// requests[i] (>= 1). Returns one result per request, in order: on success the response owns its
// outputs and takes over its request; a failed execution fails every request with its status, a
// request the backend failed alone (ExecuteArgs::request_errors) gets its own error.
// Batch outputs (batch_io.h) are scattered by each request's shape of their source input.
// `times` (required) receives when the single execution's phases ran. `executed` (optional) is set
// to whether the execution counts in the statistics: a request got its outputs, or the backend
// failed requests alone (also all of them, as Triton's backend reports that execution).
// `release_flags` (one per request, or empty): see RunOnInstance; a request the backend
// rescheduled gets a response without outputs that holds its request (the caller takes it back).
std::vector<StatusOr<std::unique_ptr<InferenceResponse>>> RunBatchOnInstance(
    backend::ModelInstance& instance, const ModelInfo& model,
    std::vector<std::unique_ptr<InferenceRequest>> requests,
    const std::vector<int64_t>& batch_sizes, ExecutionTimes* times, bool* executed = nullptr,
    std::span<uint32_t> release_flags = {});

}  // namespace nereid
