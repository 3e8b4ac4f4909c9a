// Triton's model repository RPCs: RepositoryIndex and RepositoryModelUnload answer on the
// completion-queue thread; RepositoryModelLoad blocks until the model is loaded, so its call is
// finished from the server's load thread and no completion-queue thread ever waits for a load.
#include <memory>

#include "common/error_text.h"
#include "frontends/grpc/grpc_call.h"

namespace nereid::grpc_frontend {
namespace {

namespace pb = inference;
using Service = pb::GRPCInferenceService::AsyncService;

const char* ParamTypeName(const pb::ModelRepositoryParameter& p) {
  switch (p.parameter_choice_case()) {
    case pb::ModelRepositoryParameter::kBoolParam:
      return "BOOL";
    case pb::ModelRepositoryParameter::kInt64Param:
      return "INT";
    case pb::ModelRepositoryParameter::kStringParam:
      return "STRING";
    case pb::ModelRepositoryParameter::kBytesParam:
      return "BYTES";
    default:
      return "NONE";
  }
}

Status NamedRepositoryUnsupported() {
  return Unsupported("'repository_name' specification is not supported");
}

StatusOr<ModelLoadParameters> LoadParameters(const pb::RepositoryModelLoadRequest& request) {
  ModelLoadParameters out;
  for (const auto& [key, p] : request.parameters()) {
    if (key == "config" && p.has_string_param()) {
      out.config_json = p.string_param();
    } else if (key.rfind("file:", 0) == 0 && p.has_bytes_param()) {
      out.files.emplace_back(key.substr(5), p.bytes_param());
    } else {
      return InvalidArgument("Unrecognized load parameter '" + ClientText(key) + "' with type '" +
                             ParamTypeName(p) + "'");
    }
  }
  return out;
}

grpc::Status RepositoryIndex(InferenceServer& server, const pb::RepositoryIndexRequest& request,
                             pb::RepositoryIndexResponse* response) {
  if (!request.repository_name().empty()) return ToGrpcStatus(NamedRepositoryUnsupported());
  for (const RepositoryIndexEntry& e : server.RepositoryIndex(request.ready())) {
    auto* m = response->add_models();
    m->set_name(e.name);
    if (e.version >= 0) m->set_version(std::to_string(e.version));
    m->set_state(e.state);
    m->set_reason(e.reason);
  }
  return grpc::Status::OK;
}

grpc::Status RepositoryModelUnload(InferenceServer& server,
                                   const pb::RepositoryModelUnloadRequest& request,
                                   pb::RepositoryModelUnloadResponse*) {
  if (!request.repository_name().empty()) return ToGrpcStatus(NamedRepositoryUnsupported());
  bool unload_dependents = false;
  for (const auto& [key, p] : request.parameters()) {
    if (key != "unload_dependents" || !p.has_bool_param()) {
      return ToGrpcStatus(InvalidArgument("Unrecognized unload parameter '" + ClientText(key) +
                                          "' with type '" + ParamTypeName(p) + "'"));
    }
    unload_dependents = p.bool_param();
  }
  return ToGrpcStatus(server.UnloadModel(request.model_name(), unload_dependents));
}

// CREATE -> PROCESS (hands the load to the server) -> FINISH (from the load thread).
class LoadCall final : public CqEvent {
 public:
  static void Listen(std::shared_ptr<GrpcShared> shared) {
    if (!shared->accepting.load()) return;
    GateScope gate(shared->gate);
    if (!gate) return;
    auto* call = new LoadCall(std::move(shared));
    call->shared_->service.RequestRepositoryModelLoad(&call->ctx_, &call->request_,
                                                      &call->responder_, call->shared_->cq,
                                                      call->shared_->cq, call);
  }

  void OnEvent(bool ok) override {
    if (stage_.state() == UnaryStage::kFinishing || !ok) {
      delete this;
      return;
    }
    Move(stage_, UnaryStage::kProcessing);
    Listen(shared_);
    if (grpc::Status r = CheckRestricted(*shared_, RestrictedCategory::kModelRepository, ctx_);
        !r.ok()) {
      return FinishWith(r);
    }
    if (!request_.repository_name().empty()) return Finish(NamedRepositoryUnsupported());
    auto params = LoadParameters(request_);
    if (!params.ok()) return Finish(params.status());
    request_.clear_parameters();  // the decoded copies are all that is kept
    // After this call `this` may already be finished and deleted: touch no member.
    shared_->server->LoadModelAsync(request_.model_name(), std::move(*params),
                                    [this](Status s) { Finish(s); });
  }

 private:
  explicit LoadCall(std::shared_ptr<GrpcShared> shared)
      : shared_(std::move(shared)), responder_(&ctx_) {}
  ~LoadCall() = default;

  // Any thread; the last thing done with `this`.
  void Finish(const Status& status) { FinishWith(ToGrpcStatus(status)); }
  void FinishWith(const grpc::Status& status) {
    std::shared_ptr<GrpcShared> shared = shared_;
    Move(stage_, UnaryStage::kFinishing);
    GateScope gate(shared->gate);
    if (gate) responder_.Finish(response_, status, this);
  }

  std::shared_ptr<GrpcShared> shared_;
  grpc::ServerContext ctx_;
  pb::RepositoryModelLoadRequest request_;
  pb::RepositoryModelLoadResponse response_;
  grpc::ServerAsyncResponseWriter<pb::RepositoryModelLoadResponse> responder_;
  Lifecycle<UnaryStage> stage_{UnaryStage::kListening};
};

}  // namespace

void ListenRepositoryCalls(const std::shared_ptr<GrpcShared>& shared) {
  UnaryCall<Service, pb::RepositoryIndexRequest, pb::RepositoryIndexResponse>::Listen(
      shared, &shared->service, &Service::RequestRepositoryIndex, &RepositoryIndex,
      RestrictedCategory::kModelRepository);
  UnaryCall<Service, pb::RepositoryModelUnloadRequest, pb::RepositoryModelUnloadResponse>::Listen(
      shared, &shared->service, &Service::RequestRepositoryModelUnload, &RepositoryModelUnload,
      RestrictedCategory::kModelRepository);
  LoadCall::Listen(shared);
}

}  // namespace nereid::grpc_frontend
