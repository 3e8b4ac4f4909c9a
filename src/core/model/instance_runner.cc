#include "core/model/instance_runner.h"

#include <algorithm>
#include <array>
#include <exception>
#include <string>
#include <vector>

#include "common/logging.h"
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
// the other members. A request's own shapes are viewed where they are, and up to kInlineRefs
// inputs are described without a heap allocation (every execution built three vectors before).
struct PreparedInputs {
  static constexpr size_t kInlineRefs = 4;
  PreparedInputs() = default;
  PreparedInputs(const PreparedInputs&) = delete;
  PreparedInputs& operator=(const PreparedInputs&) = delete;

  std::vector<BatchInputTensor> batch_inputs;
  std::vector<Shape> shapes;  // computed ones only (ragged, reshaped); never grows past its reserve
  std::array<backend::TensorRef, kInlineRefs> inline_refs;
  std::vector<backend::TensorRef> heap_refs;  // when there are more than kInlineRefs
  std::span<const backend::TensorRef> refs;
};

Status PrepareInputs(const ModelInfo& model, const InferenceRequest& request,
                     std::span<const InferenceRequest* const> items, PreparedInputs* prepared) {
  const bool batching = model.max_batch_size > 0;
  if (model.HasBatchIo()) {
    NEREID_ASSIGN_OR_RETURN(prepared->batch_inputs, MakeBatchInputs(model, items));
  }
  const size_t count = request.inputs.size() + prepared->batch_inputs.size();
  backend::TensorRef* refs = prepared->inline_refs.data();
  if (count > PreparedInputs::kInlineRefs) {
    prepared->heap_refs.resize(count);
    refs = prepared->heap_refs.data();
  }
  size_t n = 0;
  std::vector<Shape>& shapes = prepared->shapes;
  auto computed = [&shapes, &request](Shape s) -> const Shape& {
    if (shapes.empty()) shapes.reserve(request.inputs.size());  // so no earlier view moves
    shapes.push_back(std::move(s));
    return shapes.back();
  };
  for (const InferInput& in : request.inputs) {
    const TensorSpec* spec = model.FindInput(in.name);
    std::span<const int64_t> shape = in.shape;
    if (spec != nullptr && spec->ragged) {
      NEREID_ASSIGN_OR_RETURN(Shape s, RaggedInputShape(in.name, items));
      shape = computed(std::move(s));
    } else if (spec != nullptr && spec->has_reshape) {
      NEREID_ASSIGN_OR_RETURN(Shape s, Relayout(in.shape, batching, spec->reshape, in.name));
      shape = computed(std::move(s));
    }
    refs[n++] = {in.name, in.data_type, shape, in.data};
  }
  for (const BatchInputTensor& t : prepared->batch_inputs) {
    refs[n++] = {t.name, t.data_type, t.shape, t.data};
  }
  prepared->refs = std::span<const backend::TensorRef>(refs, n);
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

Status RescheduleRefused() {
  return InvalidArgument(
      "Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the model is not "
      "configured to handle such a flag.");
}

StatusOr<std::unique_ptr<InferenceResponse>> RunOnInstance(
    backend::ModelInstance& instance, const ModelInfo& model,
    std::unique_ptr<InferenceRequest> request, int64_t batch_size,
    std::span<const InferenceRequest* const> items, ExecutionTimes* times,
    std::span<const std::shared_ptr<backend::ResponseSender>> senders,
    std::span<Status> request_errors, std::span<uint32_t> release_flags) {
  Status lone_error;  // a lone request's error when the caller passed none
  if (request_errors.empty() && senders.empty() && items.size() == 1) {
    request_errors = std::span<Status>(&lone_error, 1);
  }
  // Release flags (API v7): the caller's, or ours when it cannot take a request back.
  const bool can_reschedule = !release_flags.empty();
  uint32_t lone_flag = backend::kReleaseAll;
  std::vector<uint32_t> own_flags;
  if (!can_reschedule) {
    if (items.size() == 1) {
      release_flags = std::span<uint32_t>(&lone_flag, 1);
    } else {
      own_flags.assign(items.size(), backend::kReleaseAll);
      release_flags = own_flags;
    }
  }
  times->compute_start = NowNs();
  times->input_end = times->output_start = times->compute_end = 0;
  PreparedInputs prepared;
  NEREID_RETURN_IF_ERROR(PrepareInputs(model, *request, items, &prepared));
  ResponseOutputs outputs(model, *request, items);
  backend::ExecuteTimes backend_times;
  const std::vector<backend::RequestInfo> infos = model.wants_request_info
                                                      ? MakeRequestInfos(model, items)
                                                      : std::vector<backend::RequestInfo>();
  backend::ExecuteArgs args{prepared.refs,  &outputs,     model.max_batch_size > 0 ? batch_size : 0,
                            &backend_times, senders,      infos,
                            request_errors, release_flags};
  const uint64_t execute_start = NowNs();
  const Status executed = instance.Execute(args);
  SetExecuteTimes(backend_times, execute_start, times);  // compute_end moves on below
  NEREID_RETURN_IF_ERROR(executed);
  bool any_rescheduled = false;
  for (size_t i = 0; i < release_flags.size(); ++i) {
    if (!Rescheduled(release_flags, i)) continue;
    any_rescheduled = true;
    if (can_reschedule || !senders.empty()) continue;  // the caller takes it back or refuses it
    if (request_errors.size() != items.size()) return RescheduleRefused();
    request_errors[i] = RescheduleRefused();
  }
  if (items.size() == 1 && request_errors.size() == 1 && !request_errors[0].ok()) {
    return request_errors[0];
  }
  auto response = std::make_unique<InferenceResponse>();
  response->model_name = model.name;
  response->model_version = model.version;
  response->id = request->id;
  if (items.size() == 1 && can_reschedule && any_rescheduled) {  // comes back without outputs
    response->request = std::move(request);
    times->compute_end = NowNs();
    return response;
  }
  // A backend that answers through its senders writes nothing into the allocator, nor one that
  // failed (or rescheduled) every request: only a caller without senders needs every output there.
  bool all_failed = !request_errors.empty() || any_rescheduled;
  for (size_t i = 0; i < items.size() && all_failed; ++i) {
    const bool failed = i < request_errors.size() && !request_errors[i].ok();
    all_failed = failed || Rescheduled(release_flags, i);
  }
  if (Status moved = outputs.MoveInto(response.get());
      !moved.ok() && senders.empty() && !all_failed) {
    return moved;
  }
  response->request = std::move(request);
  times->compute_end = NowNs();
  return response;
}

bool TakeBackRescheduled(std::span<const std::shared_ptr<DecoupledSender>> senders,
                         std::span<const uint32_t> release_flags,
                         std::vector<std::optional<DecoupledSender::TakenBack>>* taken_back) {
  bool any = false;
  for (size_t i = 0; i < senders.size(); ++i) {
    if (!Rescheduled(release_flags, i)) continue;
    if (taken_back == nullptr) {
      senders[i]->FailIfOpen(RescheduleRefused());
      continue;
    }
    (*taken_back)[i] = senders[i]->TakeBack();
    if ((*taken_back)[i].has_value()) {
      any = true;
    } else {
      LOG_ERROR("a request rescheduled after it sent its final response is not rescheduled");
    }
  }
  return any;
}

Status RunDecoupledOnInstance(backend::ModelInstance& instance, const ModelInfo& model,
                              std::unique_ptr<InferenceRequest> request, int64_t batch_size,
                              ModelStats* stats, InferCallback done, ExecutionTimes* times,
                              std::optional<DecoupledSender::TakenBack>* taken_back,
                              ResponseProgress progress) {
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
  auto sender = std::make_shared<DecoupledSender>(model, stats, std::move(request), std::move(done),
                                                  progress);
  std::shared_ptr<backend::ResponseSender> senders[] = {sender};
  backend::ExecuteTimes backend_times;
  const std::vector<backend::RequestInfo> infos = model.wants_request_info
                                                      ? MakeRequestInfos(model, std::span(&item, 1))
                                                      : std::vector<backend::RequestInfo>();
  uint32_t release_flag = backend::kReleaseAll;
  backend::ExecuteArgs args{prepared.refs,
                            &outputs,
                            model.max_batch_size > 0 ? batch_size : 0,
                            &backend_times,
                            senders,
                            infos,
                            {},
                            std::span(&release_flag, 1)};
  const uint64_t execute_start = NowNs();
  const Status executed = instance.Execute(args);
  SetExecuteTimes(backend_times, execute_start, times);
  senders[0].reset();
  bool rescheduled = false;
  if (executed.ok() && (release_flag & backend::kReleaseReschedule) != 0) {
    if (taken_back == nullptr) {
      sender->FailIfOpen(RescheduleRefused());
    } else {
      *taken_back = sender->TakeBack();
      rescheduled = taken_back->has_value();
      if (!rescheduled) {
        LOG_ERROR("model '{}' rescheduled a request after its final response; not rescheduled",
                  model.name);
      }
    }
  }
  // An Execute that fails ends its request with that error unless FINAL was already sent.
  if (!executed.ok()) {
    sender->FailIfOpen(executed);
  } else if (!rescheduled && sender.use_count() == 1) {  // the plugin kept no reference to it
    sender->FinishFromAllocator(
        [&outputs](InferenceResponse* response) { return outputs.MoveInto(response); });
  }
  return executed;
}

}  // namespace nereid
