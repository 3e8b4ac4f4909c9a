// The trace points of one request in a model version (trace extension, REFERENCE-2.md §12.2):
// REQUEST_START and the TENSOR_QUEUE_INPUT tensors when the version takes the request,
// QUEUE_START when it goes to the scheduler, and, from the response, COMPUTE_START,
// COMPUTE_INPUT_END, COMPUTE_OUTPUT_START, COMPUTE_END, the TENSOR_BACKEND_OUTPUT tensors and
// REQUEST_END. Used only for sampled requests (InferenceRequest::trace not null).
#pragma once

#include <memory>

#include "core/model/model_info.h"
#include "core/request/inference_request.h"

namespace nereid {

// REQUEST_START (at the request's received_at) and the inputs; then QUEUE_START now.
void TraceRequestStart(trace::Trace& trace, const ModelInfo& model,
                       const InferenceRequest& request);

// `done` wrapped so that the response's compute times, outputs and REQUEST_END are recorded
// before it runs.
InferCallback TracedCallback(std::shared_ptr<trace::Trace> trace, InferCallback done);

}  // namespace nereid
