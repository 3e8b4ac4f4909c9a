// The per-request view of an execution (backend::RequestInfo) for backends that ask for it
// (BackendInfo::wants_request_info, e.g. python): id, rows of the batch, sequence id and flags,
// the other request parameters as JSON.
//
// Thread-safety: stateless.
#pragma once

#include <span>
#include <vector>

#include "core/model/model_info.h"
#include "core/request/inference_request.h"
#include "nereid/backend_api.h"

namespace nereid {

// One entry per item, in batch order; the views point into the items.
std::vector<backend::RequestInfo> MakeRequestInfos(const ModelInfo& model,
                                                   std::span<const InferenceRequest* const> items);

// `parameters` minus the ones Triton consumes itself (sequence_*, priority, timeout, ...), as a
// JSON object.
std::string RequestParametersJson(const Parameters& parameters);

}  // namespace nereid
