#include "core/model/instance_runner.h"

#include <algorithm>
#include <exception>
#include <string>
#include <vector>

#include "core/model/batch_io.h"
#include "core/model/decoupled_sender.h"
#include "core/model/request_info.h"
#include "core/shm/shm_tensors.h"

namespace nereid {
namespace {

// Collects backend outputs into InferOutputs, mapping model-side shapes back to config dims.
class ResponseOutputs final : public backend::OutputAllocator {
 public:
  ResponseOutputs(const ModelInfo& model, const InferenceRequest& request,
                  std::span<const InferenceRequest* const> items)
      : model_(model), request_(request), items_(items) {
    outputs_.reserve(model_.outputs.size());  // Allocate hands out spans into these strings
  }

  bool IsRequested(std::string_view name) const override {
    if (request_.outputs.empty()) return model_.FindOutput(name) != nullptr;
    for (const auto& o : request_.outputs) {
      if (o.name == name) return true;
    }
    return false;
  }

  StatusOr<std::span<char>> Allocate(std::string_view name, DataType data_type,
                                     std::span<const int64_t> shape, size_t byte_size) override {
    const TensorSpec* spec = model_.FindOutput(name);
    if (spec == nullptr) {
      return Internal("model '" + model_.name + "' produced unexpected output '" +
                      std::string(name) + "'");
    }
    if (data_type != spec->data_type) {
      return Internal("model '" + model_.name + "' produced output '" + spec->name + "' of type " +
                      std::string(DataTypeWireName(data_type)) + ", configuration says " +
                      std::string(DataTypeWireName(spec->data_type)));
    }
    for (const auto& o : outputs_) {
      if (o.name == name) return Internal("output '" + spec->name + "' allocated twice");
    }
    InferOutput out;
    out.name = spec->name;
    out.data_type = data_type;
    const BatchOutputSpec* scatter = model_.FindBatchOutput(name);
    if (scatter != nullptr) {
      out.shape.assign(shape.begin(), shape.end());
      if (items_.size() == 1) {
        NEREID_ASSIGN_OR_RETURN(out.shape, ScatterShape(model_, *spec, *scatter, *items_[0]));
        NEREID_RETURN_IF_ERROR(CheckScatterSize(*spec, out.shape, byte_size));
      }
    } else if (spec->has_reshape) {
      NEREID_ASSIGN_OR_RETURN(out.shape,
                              Relayout(shape, model_.max_batch_size > 0, spec->dims, spec->name));
    } else {
      out.shape.assign(shape.begin(), shape.end());
    }
    if (std::optional<std::span<char>> region = SharedMemoryTarget(name)) {
      // The client's region, bounds-checked and pinned by the request: the backend writes the
      // output there and nothing copies it again (core/shm/shm_tensors.h).
      if (byte_size > region->size()) return OutputRegionTooSmall(name, region->size(), byte_size);
      out.in_shared_memory = true;
      outputs_.push_back(std::move(out));
      return region->subspan(0, byte_size);
    }
    try {
      out.data.resize(byte_size);
    } catch (const std::exception&) {  // length_error or bad_alloc: must not cross the plugin
      return Internal("model '" + model_.name + "' output '" + spec->name + "' needs " +
                      std::to_string(byte_size) + " bytes, more than can be allocated");
    }
    outputs_.push_back(std::move(out));
    return std::span<char>(outputs_.back().data.data(), byte_size);
  }

  // Moves the requested outputs into `response`, in request order (config order when the request
  // named none).
  Status MoveInto(InferenceResponse* response) {
    auto take = [&](const std::string& name) -> Status {
      for (auto& o : outputs_) {
        if (o.name == name) {
          response->outputs.push_back(std::move(o));
          return Status::Ok();
        }
      }
      return Internal("model '" + model_.name + "' did not produce output '" + name + "'");
    };
    if (request_.outputs.empty()) {
      for (const auto& spec : model_.outputs) NEREID_RETURN_IF_ERROR(take(spec.name));
    } else {
      for (const auto& o : request_.outputs) NEREID_RETURN_IF_ERROR(take(o.name));
    }
    return Status::Ok();
  }

 private:
  // A lone request's output asked into shared memory. A batch of several writes into a buffer of
  // its own and the server copies each request's slice afterwards.
  std::optional<std::span<char>> SharedMemoryTarget(std::string_view name) const {
    if (items_.size() != 1 || items_[0] != &request_) return std::nullopt;
    for (const RequestedOutput& o : request_.outputs) {
      if (o.name == name) return o.shared_memory;
    }
    return std::nullopt;
  }

  Status CheckScatterSize(const TensorSpec& spec, const Shape& shape, size_t byte_size) const {
    if (spec.data_type == DataType::kBytes) return Status::Ok();
    NEREID_ASSIGN_OR_RETURN(size_t expected, FixedByteSize(spec.data_type, shape, spec.name));
    if (expected != byte_size) {
      return Internal("model '" + model_.name + "' produced batch output '" + spec.name + "' of " +
                      std::to_string(byte_size) + " bytes, the request's shape " +
                      ShapeToString(shape) + " needs " + std::to_string(expected));
    }
    return Status::Ok();
  }

  const ModelInfo& model_;
  const InferenceRequest& request_;
  const std::span<const InferenceRequest* const> items_;
  std::vector<InferOutput> outputs_;  // never grows past the reservation
};

// The backend's view of an execution's inputs: views into the request (reshaped where the
// configuration says so) plus the batch inputs the core computes. Not copyable: `refs` point into
// the other members.
struct PreparedInputs {
  std::vector<BatchInputTensor> batch_inputs;
  std::vector<Shape> shapes;
  std::vector<backend::TensorRef> refs;
};

Status PrepareInputs(const ModelInfo& model, const InferenceRequest& request,
                     std::span<const InferenceRequest* const> items, PreparedInputs* prepared) {
  const bool batching = model.max_batch_size > 0;
  if (model.HasBatchIo()) {
    NEREID_ASSIGN_OR_RETURN(prepared->batch_inputs, MakeBatchInputs(model, items));
  }
  std::vector<Shape>& shapes = prepared->shapes;  // never grows past the reservation
  shapes.reserve(request.inputs.size());
  std::vector<backend::TensorRef>& refs = prepared->refs;
  refs.reserve(request.inputs.size() + prepared->batch_inputs.size());
  for (const InferInput& in : request.inputs) {
    const TensorSpec* spec = model.FindInput(in.name);
    if (spec != nullptr && spec->ragged) {
      NEREID_ASSIGN_OR_RETURN(Shape s, RaggedInputShape(in.name, items));
      shapes.push_back(std::move(s));
    } else if (spec != nullptr && spec->has_reshape) {
      NEREID_ASSIGN_OR_RETURN(Shape s, Relayout(in.shape, batching, spec->reshape, in.name));
      shapes.push_back(std::move(s));
    } else {
      shapes.push_back(in.shape);
    }
    refs.push_back({in.name, in.data_type, shapes.back(), in.data});
  }
  for (const BatchInputTensor& t : prepared->batch_inputs) {
    refs.push_back({t.name, t.data_type, t.shape, t.data});
  }
  return Status::Ok();
}

// Fills `times` from what the backend reported around Execute.
void SetExecuteTimes(const backend::ExecuteTimes& backend_times, uint64_t execute_start,
                     ExecutionTimes* times) {
  // A backend that reports nothing has all of Execute counted as compute_infer. (The clock is
  // read again only when the backend did not report where its outputs started.)
  times->input_end = backend_times.input_end_ns != 0 ? backend_times.input_end_ns : execute_start;
  times->output_start =
      backend_times.output_start_ns != 0 ? backend_times.output_start_ns : NowNs();
  times->output_start = std::max(times->output_start, times->input_end);
  times->compute_end = times->output_start;
}

}  // namespace

StatusOr<std::unique_ptr<InferenceResponse>> RunOnInstance(
    backend::ModelInstance& instance, const ModelInfo& model,
    std::unique_ptr<InferenceRequest> request, int64_t batch_size, ExecutionTimes* times) {
  const InferenceRequest* item = request.get();
  return RunOnInstance(instance, model, std::move(request), batch_size,
                       std::span<const InferenceRequest* const>(&item, 1), times);
}

StatusOr<std::unique_ptr<InferenceResponse>> RunOnInstance(
    backend::ModelInstance& instance, const ModelInfo& model,
    std::unique_ptr<InferenceRequest> request, int64_t batch_size,
    std::span<const InferenceRequest* const> items, ExecutionTimes* times,
    std::span<const std::shared_ptr<backend::ResponseSender>> senders) {
  times->compute_start = NowNs();
  times->input_end = times->output_start = times->compute_end = 0;
  PreparedInputs prepared;
  NEREID_RETURN_IF_ERROR(PrepareInputs(model, *request, items, &prepared));
  ResponseOutputs outputs(model, *request, items);
  backend::ExecuteTimes backend_times;
  const std::vector<backend::RequestInfo> infos = model.wants_request_info
                                                      ? MakeRequestInfos(model, items)
                                                      : std::vector<backend::RequestInfo>();
  backend::ExecuteArgs args{prepared.refs,  &outputs, model.max_batch_size > 0 ? batch_size : 0,
                            &backend_times, senders,  infos};
  const uint64_t execute_start = NowNs();
  const Status executed = instance.Execute(args);
  SetExecuteTimes(backend_times, execute_start, times);  // compute_end moves on below
  NEREID_RETURN_IF_ERROR(executed);
  auto response = std::make_unique<InferenceResponse>();
  response->model_name = model.name;
  response->model_version = model.version;
  response->id = request->id;
  // A backend that answers through its senders writes nothing into the allocator: only a caller
  // without senders needs every output there.
  if (Status moved = outputs.MoveInto(response.get()); !moved.ok() && senders.empty()) {
    return moved;
  }
  response->request = std::move(request);
  times->compute_end = NowNs();
  return response;
}

Status RunDecoupledOnInstance(backend::ModelInstance& instance, const ModelInfo& model,
                              std::unique_ptr<InferenceRequest> request, int64_t batch_size,
                              ModelStats* stats, InferCallback done, ExecutionTimes* times) {
  times->compute_start = NowNs();
  times->input_end = times->output_start = times->compute_end = 0;
  const InferenceRequest* item = request.get();
  PreparedInputs prepared;
  if (Status s = PrepareInputs(model, *request, std::span(&item, 1), &prepared); !s.ok()) {
    times->compute_end = NowNs();
    done(s);
    return s;
  }
  // The sender owns the request from here on; `prepared` views its memory, which lives until the
  // FINAL response (a backend reads its inputs before sending FINAL, backend_api.h).
  // A plugin that knows no senders (onnxruntime, identity, ...) serves a decoupled model as a
  // one-response backend: it writes into the allocator, and that becomes the FINAL response.
  ResponseOutputs outputs(model, *request, std::span(&item, 1));
  auto sender =
      std::make_shared<DecoupledSender>(model, stats, std::move(request), std::move(done));
  std::shared_ptr<backend::ResponseSender> senders[] = {sender};
  backend::ExecuteTimes backend_times;
  const std::vector<backend::RequestInfo> infos = model.wants_request_info
                                                      ? MakeRequestInfos(model, std::span(&item, 1))
                                                      : std::vector<backend::RequestInfo>();
  backend::ExecuteArgs args{prepared.refs,  &outputs, model.max_batch_size > 0 ? batch_size : 0,
                            &backend_times, senders,  infos};
  const uint64_t execute_start = NowNs();
  const Status executed = instance.Execute(args);
  SetExecuteTimes(backend_times, execute_start, times);
  senders[0].reset();
  // An Execute that fails ends its request with that error unless FINAL was already sent.
  if (!executed.ok()) {
    sender->FailIfOpen(executed);
  } else if (sender.use_count() == 1) {  // the plugin kept no reference to its sender
    sender->FinishFromAllocator(
        [&outputs](InferenceResponse* response) { return outputs.MoveInto(response); });
  }
  return executed;
}

}  // namespace nereid
