#include "core/model/model_info.h"

#include "model_config.pb.h"

namespace nereid {
namespace {

template <typename T>
TensorSpec SpecFrom(const T& t) {
  TensorSpec spec;
  spec.name = t.name();
  spec.data_type = static_cast<DataType>(t.data_type());  // same numbering
  spec.dims.assign(t.dims().begin(), t.dims().end());
  if (t.has_reshape()) {
    spec.has_reshape = true;
    spec.reshape.assign(t.reshape().shape().begin(), t.reshape().shape().end());
  }
  return spec;
}

}  // namespace

ModelInfo ModelInfo::FromConfig(const inference::ModelConfig& config, int64_t version) {
  ModelInfo info;
  info.name = config.name();
  info.version = version;
  info.decoupled = config.model_transaction_policy().decoupled();
  info.max_batch_size = config.max_batch_size();
  for (const auto& in : config.input()) {
    TensorSpec spec = SpecFrom(in);
    spec.optional = in.optional();
    spec.ragged = in.allow_ragged_batch();
    info.inputs.push_back(std::move(spec));
  }
  for (const auto& out : config.output()) info.outputs.push_back(SpecFrom(out));
  for (const auto& bi : config.batch_input()) {
    BatchInputSpec spec;
    spec.kind = static_cast<BatchInputKind>(bi.kind());  // same numbering
    spec.target_names.assign(bi.target_name().begin(), bi.target_name().end());
    spec.data_type = static_cast<DataType>(bi.data_type());
    if (!bi.source_input().empty()) spec.source_input = bi.source_input(0);
    info.batch_inputs.push_back(std::move(spec));
  }
  for (const auto& bo : config.batch_output()) {
    BatchOutputSpec spec;
    spec.target_names.assign(bo.target_name().begin(), bo.target_name().end());
    if (!bo.source_input().empty()) spec.source_input = bo.source_input(0);
    info.batch_outputs.push_back(std::move(spec));
  }
  // emplace keeps the first of repeated names, as the scan would find it.
  for (size_t i = 0; i < info.inputs.size(); ++i) info.input_index_.emplace(info.inputs[i].name, i);
  for (size_t i = 0; i < info.outputs.size(); ++i) {
    info.output_index_.emplace(info.outputs[i].name, i);
  }
  return info;
}

const TensorSpec* ModelInfo::Find(const std::vector<TensorSpec>& specs, const Index& index,
                                  std::string_view name) {
  if (!index.empty()) {
    auto it = index.find(name);
    // Trust the index only while it still describes `specs`.
    if (it != index.end() && it->second < specs.size() && specs[it->second].name == name) {
      return &specs[it->second];
    }
    if (it == index.end() && index.size() == specs.size()) return nullptr;
  }
  for (const auto& t : specs) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

bool ModelInfo::HasBatchIo() const {
  if (!batch_inputs.empty() || !batch_outputs.empty()) return true;
  for (const auto& in : inputs) {
    if (in.ragged) return true;
  }
  return false;
}

const BatchOutputSpec* ModelInfo::FindBatchOutput(std::string_view output) const {
  for (const auto& bo : batch_outputs) {
    for (const auto& t : bo.target_names) {
      if (t == output) return &bo;
    }
  }
  return nullptr;
}

const TensorSpec* ModelInfo::FindInput(std::string_view name) const {
  return Find(inputs, input_index_, name);
}

const TensorSpec* ModelInfo::FindOutput(std::string_view name) const {
  return Find(outputs, output_index_, name);
}

StatusOr<Shape> Relayout(std::span<const int64_t> shape, bool has_batch,
                         std::span<const int64_t> to, std::string_view tensor_name) {
  const size_t skip = has_batch ? 1 : 0;
  if (shape.size() < skip) {
    return InvalidArgument("tensor '" + std::string(tensor_name) + "' lacks a batch dimension");
  }
  auto count = ElementCount(shape.subspan(skip));
  if (!count) return InvalidArgument("invalid shape for '" + std::string(tensor_name) + "'");
  Shape out(shape.begin(), shape.begin() + skip);
  int64_t known = 1;
  int unknown = 0;
  for (int64_t d : to) {
    if (d == -1) {
      ++unknown;
    } else {
      known *= d;
    }
  }
  if (unknown > 1 || (unknown == 0 && known != *count) ||
      (unknown == 1 && (known == 0 || *count % known != 0))) {
    return InvalidArgument("cannot reshape '" + std::string(tensor_name) + "' from " +
                           ShapeToString(shape.subspan(skip)) + " to " + ShapeToString(to));
  }
  for (int64_t d : to) out.push_back(d == -1 ? *count / known : d);
  return out;
}

}  // namespace nereid
