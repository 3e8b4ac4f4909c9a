// Triton's classification extension: an output requested with the parameter
// `classification: N` (N > 0) comes back as a BYTES tensor of its top N values per batch item,
// each "<value>:<index>" or "<value>:<index>:<label>" when the output has a label file
// (`label_filename`, one label per line, line i labelling index i). Values are formatted with
// std::to_string, as Triton does; ties keep index order.
// Thread-safety: pure functions.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/model/model_info.h"
#include "core/request/inference_request.h"

namespace inference {
class ModelConfig;
}

namespace nereid {

// Output name -> its labels.
using OutputLabels = std::map<std::string, std::vector<std::string>>;

// Reads every output's `label_filename` from the model directory (the file must stay inside it).
StatusOr<OutputLabels> LoadOutputLabels(const inference::ModelConfig& config,
                                        const std::filesystem::path& model_dir);

// True when some requested output asks for classification.
bool WantsClassification(const InferenceRequest& request);

// Replaces the outputs of `response` that its request asked to classify. InvalidArgument for a
// `classification` that is not a non-negative integer, and for outputs of a type that has no
// order (BOOL, BYTES, FP16, BF16): "class result not available for output due to unsupported type
// '<T>'".
Status ApplyClassification(const ModelInfo& model, const OutputLabels& labels,
                           InferenceResponse* response);

}  // namespace nereid
