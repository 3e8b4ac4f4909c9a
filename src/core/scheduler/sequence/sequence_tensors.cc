#include "core/scheduler/sequence/sequence_tensors.h"

#include <algorithm>
#include <cstring>

namespace nereid {
namespace {

// Buffers of one request's added tensors; the request keeps them alive.
struct AddedBuffers {
  std::vector<std::string> buffers;
};

void AddInput(InferenceRequest* request, AddedBuffers* added, const std::string& name,
              DataType type, Shape shape, std::string bytes) {
  added->buffers.push_back(std::move(bytes));
  const std::string& b = added->buffers.back();
  InferInput in;
  in.name = name;
  in.data_type = type;
  in.shape = std::move(shape);
  in.data = std::span<const char>(b.data(), b.size());
  request->inputs.push_back(std::move(in));
}

std::string CorridBytes(const CorridSpec& spec, const CorrelationId& id) {
  auto fixed = [&](auto value) {
    std::string out(sizeof(value), '\0');
    std::memcpy(out.data(), &value, sizeof(value));
    return out;
  };
  switch (spec.data_type) {
    case DataType::kBytes: {
      const std::string& s = id.is_string ? id.text : std::string();
      std::string out = fixed(static_cast<uint32_t>(s.size()));
      return out + s;
    }
    case DataType::kInt64:
      return fixed(static_cast<int64_t>(id.number));
    case DataType::kUint32:
      return fixed(static_cast<uint32_t>(id.number));
    case DataType::kInt32:
      return fixed(static_cast<int32_t>(id.number));
    default:
      return fixed(id.number);
  }
}

Shape Row(const SequenceOptions& o, const Shape& item) {
  if (o.max_batch_size == 0) return item;
  Shape s{1};
  s.insert(s.end(), item.begin(), item.end());
  return s;
}

// Variable dims of a state without initial_state become 1 on the start request (the seed).
Shape StartShape(const StateSpec& spec) {
  if (spec.has_initial) return spec.initial_dims;
  Shape s = spec.dims;
  for (int64_t& d : s) {
    if (d < 0) d = 1;
  }
  return s;
}

std::string ZeroBytes(DataType type, int64_t count) {
  const size_t element = type == DataType::kBytes ? 4 : DataTypeByteSize(type);
  return std::string(static_cast<size_t>(count) * element, '\0');
}

}  // namespace

std::string CorrelationId::Key() const {
  return is_string ? "s" + text : "n" + std::to_string(number);
}

std::string CorrelationId::ToString() const {
  return is_string ? "\"" + text + "\"" : std::to_string(number);
}

ModelInfo SequenceExecInfo(const ModelInfo& model, const SequenceOptions& o) {
  ModelInfo info = model;
  for (const auto* c : {&o.start, &o.end, &o.ready}) {
    if (*c) info.inputs.push_back({(*c)->name, (*c)->data_type, {1}, false, {}, false});
  }
  if (o.corrid) info.inputs.push_back({o.corrid->name, o.corrid->data_type, {1}, false, {}, false});
  for (const StateSpec& s : o.states) {
    info.inputs.push_back({s.input_name, s.data_type, s.dims, false, {}, false});
    if (info.FindOutput(s.output_name) == nullptr) {
      info.outputs.push_back({s.output_name, s.data_type, s.dims, false, {}, false});
    }
  }
  return info;
}

void AddSequenceInputs(const SequenceOptions& o, bool start, bool end, bool ready,
                       const CorrelationId& corrid, const StoredState* state,
                       InferenceRequest* request) {
  auto added = std::make_shared<AddedBuffers>();
  added->buffers.reserve(4 + o.states.size());  // spans point into these strings
  const Shape control_shape = Row(o, {1});
  if (o.start) {
    AddInput(request, added.get(), o.start->name, o.start->data_type, control_shape,
             o.start->values[start ? 1 : 0]);
  }
  if (o.end) {
    AddInput(request, added.get(), o.end->name, o.end->data_type, control_shape,
             o.end->values[end ? 1 : 0]);
  }
  if (o.ready) {
    AddInput(request, added.get(), o.ready->name, o.ready->data_type, control_shape,
             o.ready->values[ready ? 1 : 0]);
  }
  if (o.corrid) {
    AddInput(request, added.get(), o.corrid->name, o.corrid->data_type, control_shape,
             CorridBytes(*o.corrid, corrid));
  }
  for (size_t i = 0; i < o.states.size(); ++i) {
    const StateSpec& spec = o.states[i];
    if (state != nullptr && state->valid) {
      AddInput(request, added.get(), spec.input_name, spec.data_type, Row(o, state->shapes[i]),
               state->data[i]);
      continue;
    }
    const Shape shape = StartShape(spec);
    std::string data = spec.has_initial
                           ? spec.initial_data
                           : ZeroBytes(spec.data_type, ElementCount(shape).value_or(0));
    AddInput(request, added.get(), spec.input_name, spec.data_type, Row(o, shape), std::move(data));
  }
  request->KeepAlive(std::move(added));
}

std::unique_ptr<InferenceRequest> MakeFillerRequest(const SequenceOptions& o,
                                                    const InferenceRequest& like) {
  auto filler = std::make_unique<InferenceRequest>();
  filler->model_name = like.model_name;
  filler->model_version = like.model_version;
  filler->outputs = like.outputs;
  auto added = std::make_shared<AddedBuffers>();
  added->buffers.reserve(like.inputs.size());
  for (const InferInput& in : like.inputs) {
    std::string bytes;
    if (o.start && in.name == o.start->name) {
      bytes = o.start->values[0];
    } else if (o.end && in.name == o.end->name) {
      bytes = o.end->values[0];
    } else if (o.ready && in.name == o.ready->name) {
      bytes = o.ready->values[0];
    } else if (in.data_type == DataType::kBytes) {
      bytes = ZeroBytes(DataType::kBytes, ElementCount(in.shape).value_or(0));
    } else {
      bytes.assign(in.data.size(), '\0');
    }
    AddInput(filler.get(), added.get(), in.name, in.data_type, in.shape, std::move(bytes));
  }
  filler->KeepAlive(std::move(added));
  return filler;
}

Status TakeStateOutputs(const ModelInfo& model, const SequenceOptions& o,
                        const std::vector<std::string>& client_outputs, InferenceResponse* response,
                        StoredState* state) {
  StoredState next;
  next.shapes.resize(o.states.size());
  next.data.resize(o.states.size());
  for (size_t i = 0; i < o.states.size(); ++i) {
    const StateSpec& spec = o.states[i];
    auto it = std::find_if(response->outputs.begin(), response->outputs.end(),
                           [&](const InferOutput& out) { return out.name == spec.output_name; });
    if (it == response->outputs.end()) {
      return Internal("model '" + model.name + "' did not produce state output '" +
                      spec.output_name + "'");
    }
    Shape item = it->shape;
    if (o.max_batch_size > 0 && !item.empty()) item.erase(item.begin());
    if (!ShapeMatches(item, spec.dims)) {
      return Internal("model '" + model.name + "' produced state output '" + spec.output_name +
                      "' of shape " + ShapeToString(item) +
                      ", which does not match the state dims " + ShapeToString(spec.dims));
    }
    next.shapes[i] = std::move(item);
    next.data[i] = it->data;
  }
  next.valid = true;
  std::vector<InferOutput> kept;
  kept.reserve(client_outputs.size());
  for (const std::string& name : client_outputs) {
    for (InferOutput& out : response->outputs) {
      if (out.name == name) {
        kept.push_back(std::move(out));
        break;
      }
    }
  }
  response->outputs = std::move(kept);
  *state = std::move(next);
  return Status::Ok();
}

}  // namespace nereid
