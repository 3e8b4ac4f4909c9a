// Auto-completion of a model configuration from what an ONNX model declares (Triton's
// onnxruntime backend behaviour). Pure code without ONNX Runtime; stateless; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "nereid/status.h"
#include "onnxruntime/model_io.h"

namespace nereid::backends::ort {

// Returns `config_json` (Triton's JSON rendering of inference.ModelConfig) completed from `io`:
//  - max_batch_size: when it is 0, default_max_batch_size > 0, the model can batch
//    (ModelCanBatch) and every listed tensor that has dims has the model's rank minus one, it
//    becomes default_max_batch_size; when that is > 1 and the config has neither
//    dynamic_batching nor sequence_batching, an empty "dynamic_batching" is added (as Triton
//    does).
//  - input / output: every model tensor missing from the list is appended (name, data_type,
//    dims); a listed tensor gets its missing data_type ("TYPE_INVALID" or absent) and its missing
//    or empty dims from the model. Dims drop the model's first dimension when max_batch_size > 0;
//    dynamic dimensions are -1; a tensor that would have no dims gets dims [1] and reshape [].
//  - platform "onnxruntime_onnx" and backend "onnxruntime" when empty.
// Every other field is kept as it was. InvalidArgument when the JSON is malformed.
StatusOr<std::string> CompleteConfig(std::string_view config_json, const ModelIo& io,
                                     int default_max_batch_size);

}  // namespace nereid::backends::ort
