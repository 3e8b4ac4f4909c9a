// Streaming (SAX) parser of the KServe v2 JSON inference request header. No DOM is built: `data`
// arrays are converted element by element into one owned buffer per input. Inputs whose bytes
// come from the binary tail (`parameters.binary_data_size`) are listed for the binary-data codec.
// Internal to the HTTP frontend; stateless functions, thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "core/request/inference_request.h"
#include "nereid/status.h"

namespace nereid {

inline constexpr int kMaxJsonNestingDepth = 100;

struct PendingBinaryInput {
  size_t input_index;  // into request->inputs
  uint64_t byte_size;  // binary_data_size
};

struct ParsedInferHeader {
  std::unique_ptr<InferenceRequest> request;
  std::vector<PendingBinaryInput> binary_inputs;  // in input order
  bool binary_output_default = false;             // request parameter binary_data_output
};

// Parses `json` (exactly the JSON header, no binary tail). Inputs decoded from JSON `data` own
// their bytes through request->KeepAlive; binary inputs are left with empty data. Consumed
// frontend parameters (binary_data_size, binary_data_output) are removed from the parameter maps;
// output parameters (binary_data, classification, ...) stay in RequestedOutput::parameters.
// Every malformed request gives InvalidArgument with Triton's wording where Triton has one.
StatusOr<ParsedInferHeader> ParseInferRequestJson(std::string_view json);

}  // namespace nereid
