#include "core/server/plugin_infer.h"

#include <future>
#include <string>
#include <utility>
#include <vector>

#include "core/repository/load_override.h"
#include "core/server/inference_server.h"
#include "model_config.pb.h"

namespace nereid {

void PluginInferGate::Attach(InferenceServer* server) {
  MutexLock lock(mu_);
  server_ = server;
}

void PluginInferGate::Detach() {
  MutexLock lock(mu_);
  server_ = nullptr;
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
  for (const backend::TensorRef& t : call.inputs) {
    auto bytes = std::make_shared<const std::string>(t.data.data(), t.data.size());
    InferInput in;
    in.name = std::string(t.name);
    in.data_type = t.data_type;
    in.shape.assign(t.shape.begin(), t.shape.end());
    in.data = std::span<const char>(bytes->data(), bytes->size());
    request->KeepAlive(std::move(bytes));
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
  MutexLock lock(mu_);
  if (server_ == nullptr) {
    callback(NotAttached());
    return;
  }
  StatusOr<ServedModel> model = server_->AcquireModel(call.model_name, call.model_version);
  if (!model.ok()) {
    callback(model.status());
    return;
  }
  if (!call.decoupled && model->config().model_transaction_policy().decoupled()) {
    callback(DecoupledRefused(call.model_name));
    return;
  }
  server_->InferAsync(std::move(*model), std::move(request), std::move(callback));
}

}  // namespace nereid
