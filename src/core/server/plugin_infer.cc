#include "core/server/plugin_infer.h"

#include <string>
#include <utility>
#include <vector>

#include "core/server/inference_server.h"

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
  for (const std::string& name : call.requested_outputs) {
    RequestedOutput out;
    out.name = name;
    request->outputs.push_back(std::move(out));
  }
  InferCallback callback = [done](StatusOr<std::unique_ptr<InferenceResponse>> response) {
    if (!response.ok()) {
      done(response.status());
      return;
    }
    std::vector<backend::InferTensor> outputs;
    for (InferOutput& o : (*response)->outputs) {
      outputs.push_back({std::move(o.name), o.data_type, std::move(o.shape), std::move(o.data)});
    }
    done(std::move(outputs));
  };
  MutexLock lock(mu_);
  if (server_ == nullptr) {
    callback(Unavailable("Server is not ready: inference requests from models are refused"));
    return;
  }
  server_->InferAsync(std::move(request), std::move(callback));
}

}  // namespace nereid
