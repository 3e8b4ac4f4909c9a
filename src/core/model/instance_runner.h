// Runs one validated request on one backend instance: presents the inputs in the model's layout
// (reshape), collects the outputs into an InferenceResponse (mapping reshape back) and orders
// them as the request asked.
//
// Thread-safety: stateless; callers guarantee one Execute at a time per instance.
#pragma once

#include <memory>

#include "core/model/model_info.h"
#include "core/request/inference_request.h"
#include "core/stats/model_stats.h"
#include "nereid/backend_api.h"

namespace nereid {

// `batch_size` is what ValidateRequest returned. On success the response owns the outputs and
// takes over the request. `times` (required) receives when each phase ran, success or not.
StatusOr<std::unique_ptr<InferenceResponse>> RunOnInstance(backend::ModelInstance& instance,
                                                           const ModelInfo& model,
                                                           std::unique_ptr<InferenceRequest> request,
                                                           int64_t batch_size,
                                                           ExecutionTimes* times);

}  // namespace nereid
