#include "core/ensemble/ensemble_scheduler.h"

#include <algorithm>
#include <atomic>

#include "core/ensemble/ensemble_run.h"
#include "core/model/model_version.h"

namespace nereid {
namespace {

// The ensemble request, shared by the tensors that view its inputs. The request itself goes back
// to the frontend in the response; its input memory stays alive with it.
struct EnsembleRequestState {
  std::unique_ptr<InferenceRequest> request;
  // The steps' compute durations, summed as they complete (on the composing models' threads):
  // the ensemble reports the sums as its own compute_input/infer/output (REFERENCE-2 §7.4).
  std::atomic<uint64_t> input_ns{0};
  std::atomic<uint64_t> infer_ns{0};
  std::atomic<uint64_t> output_ns{0};

  void Add(const ComputeDurations& d) {
    input_ns.fetch_add(d.input_ns, std::memory_order_relaxed);
    infer_ns.fetch_add(d.infer_ns, std::memory_order_relaxed);
    output_ns.fetch_add(d.output_ns, std::memory_order_relaxed);
  }
  ComputeDurations Sum() const {
    return {input_ns.load(std::memory_order_relaxed), infer_ns.load(std::memory_order_relaxed),
            output_ns.load(std::memory_order_relaxed)};
  }
};

// Batch adaptation between a batching and a non-batching side (REFERENCE-2 §7.2): a tensor that
// matches a batching model's dims without a batch dimension gets a leading 1; a batch-1 tensor that
// does not match a non-batching model's dims loses its batch dimension.
Shape AdaptShape(const Shape& shape, const ModelInfo& model, const TensorSpec* spec) {
  if (spec == nullptr) return shape;
  if (model.max_batch_size > 0) {
    if (ShapeMatches(shape, spec->dims)) {
      Shape out{1};
      out.insert(out.end(), shape.begin(), shape.end());
      return out;
    }
    return shape;
  }
  if (!ShapeMatches(shape, spec->dims) && !shape.empty() && shape[0] == 1) {
    return Shape(shape.begin() + 1, shape.end());
  }
  return shape;
}

// The reply's copy of an ensemble output: a step's output that nothing else holds any more is
// moved, not copied (the scheduler makes every step output's owner its own InferOutput).
InferOutput TakeOutput(const std::string& name, EnsembleTensorValue&& value, bool from_step) {
  InferOutput out;
  out.name = name;
  out.data_type = value.data_type;
  out.shape = std::move(value.shape);
  if (from_step && value.owner.use_count() == 1) {
    auto produced = std::static_pointer_cast<const InferOutput>(value.owner);
    auto* owned = const_cast<InferOutput*>(produced.get());
    if (owned->data.data() == value.data.data() && owned->data.size() == value.data.size()) {
      out.data = std::move(owned->data);
      return out;
    }
  }
  out.data.assign(value.data.data(), value.data.size());
  return out;
}

// A step's response as tensors the run shares: each output owned by itself.
NamedTensors StepOutputs(InferenceResponse& response) {
  NamedTensors outputs;
  outputs.reserve(response.outputs.size());
  for (InferOutput& out : response.outputs) {
    auto owned = std::make_shared<InferOutput>(std::move(out));
    EnsembleTensorValue value{owned->data_type, owned->shape, std::span<const char>(owned->data),
                              owned};
    outputs.emplace_back(owned->name, std::move(value));
  }
  return outputs;
}

// The ensemble's response with the wanted outputs of `result` (without its request).
std::unique_ptr<InferenceResponse> EnsembleResponse(const ModelInfo& info, const EnsemblePlan& plan,
                                                    const InferenceRequest& request,
                                                    EnsembleResult& result) {
  auto response = std::make_unique<InferenceResponse>();
  response->model_name = info.name;
  response->model_version = info.version;
  response->id = request.id;
  // Triton's ensemble responses carry the sequence the request belongs to and its flags.
  const Parameters& asked = request.parameters;
  if (const ParameterValue* sequence_id = asked.Find("sequence_id")) {
    response->parameters.Set("sequence_id", *sequence_id);
    response->parameters.Set("sequence_start", GetBool(asked, "sequence_start").value_or(false));
    response->parameters.Set("sequence_end", GetBool(asked, "sequence_end").value_or(false));
  }
  response->outputs.reserve(result.size());
  for (auto& [t, value] : result) {
    const std::string& name = plan.tensor_name(t);
    // The ensemble's own batching decides the reply's shape, as for a step's inputs.
    value.shape = AdaptShape(value.shape, info, info.FindOutput(name));
    response->outputs.push_back(TakeOutput(name, std::move(value), plan.producer(t) >= 0));
  }
  return response;
}

}  // namespace

EnsembleScheduler::EnsembleScheduler(const ModelInfo* info, ModelStats* stats, EnsemblePlan plan,
                                     ModelLookup lookup)
    : info_(info),
      stats_(stats),
      plan_(std::move(plan)),
      lookup_(std::move(lookup)),
      limiter_(plan_.name(), plan_.steps().size(), plan_.max_inflight_requests()) {}

void EnsembleScheduler::Enqueue(SchedulerJob&& job, bool /*allow_inline*/) {
  const uint64_t start = job.request_start_ns != 0 ? job.request_start_ns : NowNs();
  const int64_t batch_size = job.batch_size;
  auto state = std::make_shared<EnsembleRequestState>();
  state->request = std::move(job.request);
  InferenceRequest& request = *state->request;

  std::vector<std::pair<size_t, EnsembleTensorValue>> inputs;
  inputs.reserve(request.inputs.size());
  for (const InferInput& in : request.inputs) {
    const int64_t t = plan_.FindTensor(in.name);
    if (t < 0) {
      stats_->RecordFailure(FailureReason::kRejected, start, NowNs());
      job.done(InvalidArgument("unexpected input '" + in.name +
                               "' in request header that does not map to any ensemble inputs"));
      return;
    }
    inputs.emplace_back(static_cast<size_t>(t),
                        EnsembleTensorValue{in.data_type, in.shape, in.data, state});
  }
  std::vector<size_t> wanted;
  if (request.outputs.empty()) {
    wanted = plan_.outputs();
  } else {
    for (const RequestedOutput& out : request.outputs) {
      const int64_t t = plan_.FindTensor(out.name);
      // Request validation accepted only the ensemble's outputs, and each of them is a tensor.
      if (t >= 0 && std::find(wanted.begin(), wanted.end(), t) == wanted.end()) {
        wanted.push_back(static_cast<size_t>(t));
      }
    }
  }

  if (info_->decoupled && !request.on_response) {
    // Only streaming frontends take several responses; the others refuse decoupled models first.
    stats_->RecordFailure(FailureReason::kRejected, start, NowNs());
    job.done(Unsupported("model '" + info_->name +
                         "' sent several responses to a request whose protocol takes one"));
    return;
  }
  StepDispatcher dispatch = [this, state](size_t step, NamedTensors step_inputs,
                                          StepPartial partial, StepDone done) {
    const InferenceRequest& parent = *state->request;
    if (parent.IsCancelled()) {
      done(parent.CancelledStatus());
      return;
    }
    const EnsembleStepPlan& plan = plan_.steps()[step];
    auto model = lookup_(plan.model_name, plan.model_version);
    if (!model.ok()) {
      done(model.status());
      return;
    }
    const ModelInfo& composing = (*model)->info();
    auto sub = std::make_unique<InferenceRequest>();
    sub->model_name = plan.model_name;
    sub->model_version = (*model)->version();
    sub->id = parent.id;
    sub->parameters = parent.parameters;
    sub->cancel_token = parent.cancel_token;
    sub->server_stop = parent.server_stop;
    sub->received_at = std::chrono::steady_clock::now();
    if (parent.trace != nullptr) sub->trace = parent.trace->SpawnChild();  // parent_id: ours
    sub->inputs.reserve(step_inputs.size());
    for (auto& [name, value] : step_inputs) {
      InferInput in;
      in.name = name;
      in.data_type = value.data_type;
      in.shape = AdaptShape(value.shape, composing, composing.FindInput(name));
      in.data = value.data;
      sub->inputs.push_back(std::move(in));
      sub->KeepAlive(std::move(value.owner));
    }
    sub->outputs.reserve(plan.outputs.size());
    for (const auto& [name, t] : plan.outputs) sub->outputs.push_back(RequestedOutput{name, {}});
    if (composing.decoupled) {
      sub->on_response = [state, partial = std::move(partial)](
                             StatusOr<std::unique_ptr<InferenceResponse>> result) {
        if (!result.ok()) {
          partial(result.status());
          return;
        }
        state->Add((*result)->compute);
        partial(StepOutputs(**result));
      };
    }
    // max_inflight_requests: a slot from just before dispatch until the step's FINAL response.
    limiter_.Acquire(step, [state] { return state->request->IsCancelled(); });
    ModelVersion::Infer(
        *model, std::move(sub),
        [this, step, state,
         done = std::move(done)](StatusOr<std::unique_ptr<InferenceResponse>> result) {
          limiter_.Release(step);
          if (!result.ok()) {
            done(result.status());
            return;
          }
          state->Add((*result)->compute);
          // The step's inputs are no longer needed: release them now, not with the response.
          (*result)->request.reset();
          done(StepOutputs(**result));
        },
        /*allow_inline=*/false);
  };

  // EnsembleDone is a std::function (copyable); the request's callback is move-only.
  EnsembleDone finish = [this, state, start, batch_size,
                         done = std::make_shared<InferCallback>(std::move(job.done))](
                            StatusOr<EnsembleResult> result) mutable {
    const uint64_t end = NowNs();
    if (!result.ok()) {
      stats_->RecordFailure(FailureReason::kOther, start, end);
      (*done)(result.status());
      return;
    }
    std::unique_ptr<InferenceResponse> response;
    if (info_->decoupled) {  // every response went out already: a flags-only FINAL
      response = std::make_unique<InferenceResponse>();
      response->model_name = info_->name;
      response->model_version = info_->version;
      response->id = state->request->id;
      response->empty_final = true;
    } else {
      response = EnsembleResponse(*info_, plan_, *state->request, *result);
    }
    // The ensemble's own statistics: one request, one execution, whose compute durations are
    // the sums over its steps (the steps' queueing is not in them; success spans it all).
    response->compute = state->Sum();
    const uint64_t input_end = start + response->compute.input_ns;
    const uint64_t output_start = input_end + response->compute.infer_ns;
    const ExecutionTimes exec{start, input_end, output_start,
                              output_start + response->compute.output_ns};
    stats_->RecordExecution(batch_size, exec);
    stats_->RecordSuccess(batch_size, start, start, exec, end);
    response->request = std::move(state->request);
    (*done)(std::move(response));
  };
  EnsemblePartial partial;
  if (info_->decoupled) {
    partial = [this, state](EnsembleResult result) {
      state->request->on_response(EnsembleResponse(*info_, plan_, *state->request, result));
    };
  }
  EnsembleRun::Start(&plan_, std::move(inputs), std::move(wanted), std::move(dispatch),
                     std::move(finish), std::move(partial));
}

}  // namespace nereid
