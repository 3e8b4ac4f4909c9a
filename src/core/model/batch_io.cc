#include "core/model/batch_io.h"

#include <algorithm>
#include <cstring>

namespace nereid {
namespace {

const InferInput* FindInput(const InferenceRequest& r, std::string_view name) {
  for (const auto& in : r.inputs) {
    if (in.name == name) return &in;
  }
  return nullptr;
}

StatusOr<const InferInput*> SourceInput(const InferenceRequest& r, std::string_view name,
                                        std::string_view what) {
  const InferInput* in = FindInput(r, name);
  if (in == nullptr) {
    return InvalidArgument(std::string(what) + " needs input '" + std::string(name) +
                           "', which the request does not provide");
  }
  return in;
}

StatusOr<int64_t> SourceElementCount(const InferenceRequest& r, std::string_view name,
                                     std::string_view what) {
  NEREID_ASSIGN_OR_RETURN(const InferInput* in, SourceInput(r, name, what));
  std::optional<int64_t> count = ElementCount(in->shape);
  if (!count) return InvalidArgument("input '" + in->name + "' has an invalid shape");
  return *count;
}

// Writes `values` as the batch input's data type (INT32 or FP32, validated config).
std::vector<char> Encode(DataType type, const std::vector<int64_t>& values) {
  std::vector<char> data(values.size() * 4);
  for (size_t i = 0; i < values.size(); ++i) {
    if (type == DataType::kFp32) {
      const float v = static_cast<float>(values[i]);
      std::memcpy(data.data() + 4 * i, &v, 4);
    } else {
      const int32_t v = static_cast<int32_t>(values[i]);
      std::memcpy(data.data() + 4 * i, &v, 4);
    }
  }
  return data;
}

// The values and shape of one batch input (before encoding).
Status Compute(const BatchInputSpec& spec, std::span<const InferenceRequest* const> items,
               std::vector<int64_t>* values, Shape* shape) {
  const std::string what = "batch input '" + spec.target_names.front() + "'";
  switch (spec.kind) {
    case BatchInputKind::kElementCount:
    case BatchInputKind::kAccumulatedElementCount:
    case BatchInputKind::kAccumulatedElementCountWithZero: {
      const bool accumulate = spec.kind != BatchInputKind::kElementCount;
      if (spec.kind == BatchInputKind::kAccumulatedElementCountWithZero) values->push_back(0);
      int64_t sum = 0;
      for (const InferenceRequest* r : items) {
        NEREID_ASSIGN_OR_RETURN(int64_t count, SourceElementCount(*r, spec.source_input, what));
        sum += count;
        values->push_back(accumulate ? sum : count);
      }
      *shape = {static_cast<int64_t>(values->size())};
      return Status::Ok();
    }
    case BatchInputKind::kMaxElementCountAsShape: {
      int64_t max = 0;
      for (const InferenceRequest* r : items) {
        NEREID_ASSIGN_OR_RETURN(int64_t count, SourceElementCount(*r, spec.source_input, what));
        max = std::max(max, count);
      }
      values->assign(static_cast<size_t>(max), 0);
      *shape = {max};
      return Status::Ok();
    }
    case BatchInputKind::kItemShape:
    case BatchInputKind::kItemShapeFlatten: {
      int64_t rows = 0;
      int64_t width = 0;
      for (const InferenceRequest* r : items) {
        NEREID_ASSIGN_OR_RETURN(const InferInput* in, SourceInput(*r, spec.source_input, what));
        if (in->shape.empty()) {
          return InvalidArgument(what + " needs a batch dimension in input '" + in->name + "'");
        }
        width = static_cast<int64_t>(in->shape.size()) - 1;
        for (int64_t item = 0; item < in->shape[0]; ++item) {
          values->insert(values->end(), in->shape.begin() + 1, in->shape.end());
        }
        rows += in->shape[0];
      }
      if (spec.kind == BatchInputKind::kItemShape) {
        *shape = {rows, width};
      } else {
        *shape = {static_cast<int64_t>(values->size())};
      }
      return Status::Ok();
    }
  }
  return Internal(what + " has an unknown kind");
}

}  // namespace

StatusOr<std::vector<BatchInputTensor>> MakeBatchInputs(
    const ModelInfo& model, std::span<const InferenceRequest* const> items) {
  std::vector<BatchInputTensor> tensors;
  for (const BatchInputSpec& spec : model.batch_inputs) {
    if (spec.target_names.empty()) continue;  // rejected by validation
    std::vector<int64_t> values;
    Shape shape;
    NEREID_RETURN_IF_ERROR(Compute(spec, items, &values, &shape));
    std::vector<char> data = Encode(spec.data_type, values);
    for (const std::string& target : spec.target_names) {
      tensors.push_back({target, spec.data_type, shape, data});
    }
  }
  return tensors;
}

StatusOr<Shape> RaggedInputShape(std::string_view name,
                                 std::span<const InferenceRequest* const> items) {
  int64_t total = 0;
  for (const InferenceRequest* r : items) {
    NEREID_ASSIGN_OR_RETURN(
        int64_t count, SourceElementCount(*r, name, "ragged input '" + std::string(name) + "'"));
    total += count;
  }
  return Shape{total};
}

StatusOr<Shape> ScatterShape(const ModelInfo& model, const TensorSpec& output,
                             const BatchOutputSpec& batch_output, const InferenceRequest& item) {
  const std::string what = "batch output '" + output.name + "'";
  NEREID_ASSIGN_OR_RETURN(const InferInput* source,
                          SourceInput(item, batch_output.source_input, what));
  Shape shape;
  if (model.max_batch_size > 0) shape.push_back(-1);
  shape.insert(shape.end(), output.dims.begin(), output.dims.end());
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] != -1) continue;
    if (d >= source->shape.size()) {
      return InvalidArgument(what + " has a variable dimension " + std::to_string(d) +
                             " that input '" + source->name + "' of shape " +
                             ShapeToString(source->shape) + " does not have");
    }
    shape[d] = source->shape[d];
  }
  return shape;
}

}  // namespace nereid
