// Caps on the per-request collections a client controls. Frontends refuse a request beyond them
// with InvalidArgument (HTTP 400, gRPC INVALID_ARGUMENT) and the same text, as soon as the cap is
// passed, so the work spent on a hostile request stays proportional to the cap. The values are far
// above what a Triton client sends; docs/security.md lists and justifies them.
#pragma once

#include <cstddef>

#include "nereid/status.h"

namespace nereid {

// Request-level `parameters` (sequence, priority, timeout, custom keys, ...).
inline constexpr size_t kMaxRequestParameters = 1024;
// `parameters` of one input or one requested output (binary_data_size, shm, classification, ...).
inline constexpr size_t kMaxTensorParameters = 1024;
// Inputs and requested outputs of one request. A model declaring more inputs or outputs than
// this fails to load (config validation), so no servable model needs a request beyond the cap.
inline constexpr size_t kMaxRequestInputs = 4096;
inline constexpr size_t kMaxRequestOutputs = 4096;

Status TooManyRequestParameters();
Status TooManyInputParameters();
Status TooManyOutputParameters();
Status TooManyInputs();
Status TooManyOutputs();

}  // namespace nereid
