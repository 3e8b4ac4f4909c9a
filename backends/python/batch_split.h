// Turns one execution of a batched model into the list of requests model.py's execute() gets,
// and the list of responses back into the batch's outputs. Pure (no I/O), unit-tested.
//
// Thread-safety: stateless.
#pragma once

#include <deque>
#include <span>
#include <vector>

#include "nereid/backend_api.h"
#include "nereid/status.h"
#include "python/stub_protocol.h"

namespace nereid::backends::python {

// The requests of an execution: each input sliced along its first dimension by the requests'
// batch sizes (views into `inputs`; slice shapes are kept in `shapes`). One request holding the
// whole batch when `infos` has at most one entry or an input's first dimension is not the sum of
// the batch sizes (ragged inputs are passed flat).
std::vector<RequestHeader> SplitRequests(std::span<const backend::TensorRef> inputs,
                                         std::span<const backend::RequestInfo> infos,
                                         std::span<const std::string> requested_outputs,
                                         std::deque<std::vector<int64_t>>* shapes);

// Writes the outputs of `responses` (one per request, in order, tensors inside `payload`, or
// inside `pool` for those in it) as the
// batch's outputs: each output's slices concatenated along the first dimension. A response with
// an error fails its request alone when `request_errors` has one entry per response (the error is
// put there and the response's outputs are ignored, as Triton does), else the whole execution. A
// response whose output rows differ from its request's batch size, or whose outputs disagree with
// the first successful response's, fails the whole execution. A response whose request has
// kReleaseReschedule in `release_flags` (one per response, or empty) has no rows either: the
// request runs again later (backend API v7).
Status GatherOutputs(std::span<const StubResponse> responses, std::span<const char> payload,
                     std::span<const char> pool, std::span<const RequestHeader> requests,
                     std::span<const int64_t> rows, backend::OutputAllocator* outputs,
                     std::span<Status> request_errors = {},
                     std::span<const uint32_t> release_flags = {});

}  // namespace nereid::backends::python
