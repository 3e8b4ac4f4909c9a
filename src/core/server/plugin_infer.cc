#include "core/server/plugin_infer.h"

#include <future>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/repository/load_override.h"
#include "core/server/inference_server.h"
#include "core/trace/trace.h"
#include "model_config.pb.h"

namespace nereid {

void PluginInferGate::Attach(InferenceServer* server) {
  MutexLock lock(mu_);
  server_ = server;
}

void PluginInferGate::Detach() {
  UniqueLock lock(mu_);
  server_ = nullptr;
  while (calls_ > 0) lock.Wait(calls_done_);  // an inline run still uses the server
}

backend::InferFunction PluginInferGate::Function() {
  std::shared_ptr<PluginInferGate> self = shared_from_this();
  return [self](const backend::InferCall& call, backend::InferDone done) {
    self->Call(call, std::move(done));
  };
}

backend::ModelControl PluginInferGate::Control() {
  std::shared_ptr<PluginInferGate> self = shared_from_this();
  backend::ModelControl control;
  control.is_ready = [self](const std::string& name, int64_t version) {
    return self->IsReady(name, version);
  };
  control.load = [self](const std::string& name, const std::string& config_json,
                        const std::vector<std::pair<std::string, std::string>>& files) {
    return self->Load(name, config_json, files);
  };
  control.unload = [self](const std::string& name, bool unload_dependents) {
    return self->Unload(name, unload_dependents);
  };
  return control;
}

namespace {

Status NotAttached() {
  return Unavailable("Server is not ready: inference requests from models are refused");
}

std::vector<backend::InferTensor> TakeOutputs(InferenceResponse& response) {
  std::vector<backend::InferTensor> outputs;
  for (InferOutput& o : response.outputs) {
    outputs.push_back({std::move(o.name), o.data_type, std::move(o.shape), std::move(o.data)});
  }
  return outputs;
}

// Triton's python_backend text for a non-decoupled BLS call to a decoupled model.
Status DecoupledRefused(const std::string& model) {
  return Internal("Model " + model + " - Error when running inference: Model " + model +
                  " is using the decoupled. The current BLS request call doesn't support models "
                  "using the decoupled transaction policy. Please use 'decoupled=True' argument "
                  "to the 'exec' or 'async_exec' calls for decoupled models.'");
}

}  // namespace

StatusOr<bool> PluginInferGate::IsReady(const std::string& name, int64_t version) {
  MutexLock lock(mu_);
  if (server_ == nullptr) return NotAttached();
  StatusOr<bool> ready = server_->ModelIsReady(name, version);
  if (!ready.ok() && ready.status().code() == StatusCode::kNotFound) return false;
  return ready;
}

Status PluginInferGate::Load(const std::string& name, const std::string& config_json,
                             const std::vector<std::pair<std::string, std::string>>& files) {
  ModelLoadParameters params;
  if (!config_json.empty()) params.config_json = config_json;
  params.files = files;
  auto result = std::make_shared<std::promise<Status>>();
  std::future<Status> future = result->get_future();
  {
    MutexLock lock(mu_);
    if (server_ == nullptr) return NotAttached();
    server_->LoadModelAsync(name, std::move(params),
                            [result](Status s) { result->set_value(std::move(s)); });
  }
  return future.get();
}

Status PluginInferGate::Unload(const std::string& name, bool unload_dependents) {
  MutexLock lock(mu_);
  if (server_ == nullptr) return NotAttached();
  return server_->UnloadModel(name, unload_dependents);
}

void PluginInferGate::Call(const backend::InferCall& call, backend::InferDone done) {
  auto request = std::make_unique<InferenceRequest>();
  request->model_name = call.model_name;
  request->model_version = call.model_version;
  request->id = call.id;
  // The caller's bytes when it gave their owner (API v8), else a copy of them.
  if (call.inputs_owner != nullptr) request->KeepAlive(call.inputs_owner);
  for (const backend::TensorRef& t : call.inputs) {
    InferInput in;
    in.name = std::string(t.name);
    in.data_type = t.data_type;
    in.shape.assign(t.shape.begin(), t.shape.end());
    if (call.inputs_owner != nullptr) {
      in.data = t.data;
    } else {
      auto bytes = std::make_shared<const std::string>(t.data.data(), t.data.size());
      in.data = std::span<const char>(bytes->data(), bytes->size());
      request->KeepAlive(std::move(bytes));
    }
    request->inputs.push_back(std::move(in));
  }
  if (call.timeout_us != 0) request->parameters.Set("timeout", call.timeout_us);
  if (!call.correlation_id_str.empty()) {
    request->parameters.Set("sequence_id", call.correlation_id_str);
  } else if (call.correlation_id != 0) {
    request->parameters.Set("sequence_id", call.correlation_id);
  }
  if (call.flags & 1) request->parameters.Set("sequence_start", true);
  if (call.flags & 2) request->parameters.Set("sequence_end", true);
  for (const auto& [key, value] : call.parameters) {
    std::visit([&, &key = key](const auto& v) { request->parameters.Set(key, v); }, value);
  }
  for (const std::string& name : call.requested_outputs) {
    RequestedOutput out;
    out.name = name;
    request->outputs.push_back(std::move(out));
  }
  if (call.cancel != nullptr) request->cancel_token = call.cancel;
  if (call.parent_trace != nullptr) {
    // A RequestInfo::trace (request_info.cc): a trace::Trace. The child shares the parent's root,
    // so the parent's trace is written once this call is done too.
    auto parent = std::const_pointer_cast<trace::Trace>(
        std::static_pointer_cast<const trace::Trace>(call.parent_trace));
    request->trace = parent->SpawnChild();
  }
  if (call.decoupled) {
    request->on_response =
        [on_response = call.on_response](StatusOr<std::unique_ptr<InferenceResponse>> response) {
          if (!on_response) return;
          if (!response.ok()) return on_response(response.status());
          on_response(TakeOutputs(**response));
        };
  }
  InferCallback callback = [done](StatusOr<std::unique_ptr<InferenceResponse>> response) {
    if (!response.ok()) {
      done(response.status());
      return;
    }
    done(TakeOutputs(**response));
  };
  InferenceServer* server = nullptr;
  StatusOr<ServedModel> model = NotAttached();
  {
    MutexLock lock(mu_);
    if (server_ != nullptr) {
      server = server_;
      model = server_->AcquireModel(call.model_name, call.model_version);
      if (model.ok()) ++calls_;  // Detach waits for it
    }
  }
  if (!model.ok()) {
    callback(model.status());
    return;
  }
  if (!call.decoupled && model->config().model_transaction_policy().decoupled()) {
    callback(DecoupledRefused(call.model_name));
  } else {
    // A caller that waits for the answer here (a Python model's BLS call from its execute) may
    // have the called model run on its thread when an instance is idle, saving two thread
    // hand-offs (ADR 0003). Outside the gate's lock, so that a model run here may make BLS calls
    // of its own.
    InferOptions options;
    options.allow_inline = call.allow_inline && !call.decoupled;
    // The call's trace is decided above (its parent's child, or none), as Triton's Python backend
    // decides a BLS request's: the trace extension never samples a call on its own.
    options.trace_sampled = true;
    server->InferAsync(std::move(*model), std::move(request), std::move(callback), options);
  }
  MutexLock lock(mu_);
  if (--calls_ == 0) calls_done_.notify_all();
}

}  // namespace nereid
