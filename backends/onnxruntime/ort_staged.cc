// StagedRunner (ort_internal.h): small fixed-shape executions through IoBindings made once per
// signature. Per call: copy the inputs into the bound buffers, Run, copy the outputs out; no
// OrtValue is created and ORT allocates nothing for the outputs.
#include <algorithm>
#include <cstring>

#include "onnxruntime/ort_internal.h"

namespace nereid::backends::ort {

struct StagedRunner::Entry {
  explicit Entry(Ort::Session& session) : binding(session) {}

  bool Matches(std::span<const CheckedInput> in, std::span<const PlannedOutput> out) const {
    if (in.size() != input_specs.size() || out.size() != output_specs.size()) return false;
    for (size_t i = 0; i < in.size(); ++i) {
      const std::span<const int64_t> shape = in[i].tensor->shape;
      if (in[i].spec != input_specs[i] ||
          !std::equal(shape.begin(), shape.end(), input_shapes[i].begin(), input_shapes[i].end())) {
        return false;
      }
    }
    for (size_t k = 0; k < out.size(); ++k) {
      if (out[k].spec != output_specs[k] || out[k].shape != output_shapes[k]) return false;
    }
    return true;
  }

  std::vector<size_t> input_specs;  // in the request's order
  std::vector<std::vector<int64_t>> input_shapes;
  std::vector<size_t> output_specs;
  std::vector<std::vector<int64_t>> output_shapes;
  std::vector<std::vector<char>> buffers;  // the inputs', then the outputs'
  std::vector<Ort::Value> values;          // over `buffers`, same order
  Ort::IoBinding binding;                  // holds references to `values`
  uint64_t last_used = 0;
};

StagedRunner::StagedRunner() = default;
StagedRunner::~StagedRunner() = default;

namespace {

// A bound tensor over `buffer`, which is sized here (at least one byte, so a zero-element tensor
// still has an address).
Ort::Value MakeStagedValue(const Ort::MemoryInfo& memory, std::vector<char>& buffer,
                           size_t byte_size, const std::vector<int64_t>& shape,
                           ONNXTensorElementDataType type) {
  buffer.assign(std::max<size_t>(byte_size, 1), 0);
  return Ort::Value::CreateTensor(memory, buffer.data(), byte_size, shape.data(), shape.size(),
                                  type);
}

}  // namespace

StagedRunner::Entry& StagedRunner::Find(const ExecutionPlan& plan, Ort::Session& session,
                                        std::span<const CheckedInput> inputs,
                                        std::span<const PlannedOutput> outputs) {
  for (const std::unique_ptr<Entry>& e : entries_) {
    if (e->Matches(inputs, outputs)) return *e;
  }
  auto entry = std::make_unique<Entry>(session);
  const Ort::MemoryInfo memory = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  entry->buffers.resize(inputs.size() + outputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ExecutionPlan::Tensor& spec = plan.inputs[inputs[i].spec];
    entry->input_specs.push_back(inputs[i].spec);
    entry->input_shapes.emplace_back(inputs[i].tensor->shape.begin(),
                                     inputs[i].tensor->shape.end());
    entry->values.push_back(MakeStagedValue(memory, entry->buffers[i],
                                            inputs[i].tensor->data.size(),
                                            entry->input_shapes.back(), spec.ort_type));
    entry->binding.BindInput(spec.name.c_str(), entry->values.back());
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    const ExecutionPlan::Tensor& spec = plan.outputs[outputs[k].spec];
    entry->output_specs.push_back(outputs[k].spec);
    entry->output_shapes.push_back(outputs[k].shape);
    entry->values.push_back(MakeStagedValue(memory, entry->buffers[inputs.size() + k],
                                            outputs[k].byte_size, entry->output_shapes.back(),
                                            spec.ort_type));
    entry->binding.BindOutput(spec.name.c_str(), entry->values.back());
  }
  if (entries_.size() < kMaxEntries) {
    entries_.push_back(std::move(entry));
    return *entries_.back();
  }
  auto oldest =
      std::min_element(entries_.begin(), entries_.end(),
                       [](const auto& a, const auto& b) { return a->last_used < b->last_used; });
  *oldest = std::move(entry);
  return **oldest;
}

Status StagedRunner::Run(const ExecutionPlan& plan, Ort::Session& session,
                         const Ort::RunOptions& run_options, std::span<const CheckedInput> inputs,
                         std::span<const PlannedOutput> outputs, const backend::ExecuteArgs& args) {
  Entry& entry = Find(plan, session, inputs, outputs);
  entry.last_used = ++clock_;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::span<const char> data = inputs[i].tensor->data;
    if (!data.empty()) std::memcpy(entry.buffers[i].data(), data.data(), data.size());
  }
  if (args.times != nullptr) args.times->input_end_ns = backend::ExecuteClockNs();
  session.Run(run_options, entry.binding);
  if (args.times != nullptr) args.times->output_start_ns = backend::ExecuteClockNs();
  for (size_t k = 0; k < outputs.size(); ++k) {
    const ExecutionPlan::Tensor& spec = plan.outputs[outputs[k].spec];
    NEREID_ASSIGN_OR_RETURN(
        std::span<char> dst,
        args.outputs->Allocate(spec.name, spec.data_type, outputs[k].shape, outputs[k].byte_size));
    if (dst.size() < outputs[k].byte_size) return ShortOutputBuffer();
    if (outputs[k].byte_size > 0) {
      std::memcpy(dst.data(), entry.buffers[inputs.size() + k].data(), outputs[k].byte_size);
    }
  }
  return Status::Ok();
}

}  // namespace nereid::backends::ort
