// Checks an InferenceRequest against its model before it is scheduled: names, datatypes, shapes,
// batch size and byte sizes. The same checks serve every frontend, so HTTP and gRPC answer bad
// input with the same messages (Triton's wording where Triton has one).
#pragma once

#include <cstdint>

#include "core/model/model_info.h"
#include "core/request/inference_request.h"

namespace nereid {

// Returns the request's batch size (the shared leading dimension) for batching models, 0 for
// models with max_batch_size 0.
StatusOr<int64_t> ValidateRequest(const ModelInfo& model, const InferenceRequest& request);

}  // namespace nereid
