// Triton's ragged batching, core side: what one execution of a model with ragged inputs
// (`allow_ragged_batch`), `batch_input` or `batch_output` needs from the individual requests
// gathered into it. Triton's backend library does the same per backend (BackendInputCollector::
// BatchInputShape / ProcessBatchInput, BackendOutputResponder::ProcessBatchOutput); here the core
// does it once for every backend, so plugins see batch inputs as ordinary named inputs.
//
// `items` are the validated requests of one execution, in batch order (one for an unbatched
// execution). Stateless and thread-safe.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/model_info.h"
#include "core/request/inference_request.h"
#include "core/tensor/shape.h"

namespace nereid {

// One batch input tensor of an execution; owns its bytes.
struct BatchInputTensor {
  std::string name;
  DataType data_type = DataType::kInt32;
  Shape shape;
  std::vector<char> data;
};

// Every batch input of `model` (one tensor per target name), as Triton computes them:
//   ELEMENT_COUNT                       [requests]: each request's source element count
//   ACCUMULATED_ELEMENT_COUNT           [requests]: running sums of those counts
//   ACCUMULATED_ELEMENT_COUNT_WITH_ZERO [requests + 1]: 0, then the running sums
//   MAX_ELEMENT_COUNT_AS_SHAPE          [largest count]: only the shape matters (zeros)
//   BATCH_ITEM_SHAPE                    [batch items, rank - 1]: each item's shape without the
//                                       batch dimension (a request of batch n gives n rows)
//   BATCH_ITEM_SHAPE_FLATTEN            the same values, flat
// Errors (InvalidArgument) name the batch input; they mean a request lacks the source input.
StatusOr<std::vector<BatchInputTensor>> MakeBatchInputs(
    const ModelInfo& model, std::span<const InferenceRequest* const> items);

// The model-side shape of ragged input `name` for the execution: one dimension, the total element
// count over `items` (Triton's backends flatten a ragged input the same way).
StatusOr<Shape> RaggedInputShape(std::string_view name,
                                 std::span<const InferenceRequest* const> items);

// The shape `item` receives for `output`, a target of `batch_output`: the output's dims (led by
// -1 when the model batches), each -1 replaced by the same dimension of the source input's shape
// in `item`.
StatusOr<Shape> ScatterShape(const ModelInfo& model, const TensorSpec& output,
                             const BatchOutputSpec& batch_output, const InferenceRequest& item);

}  // namespace nereid
