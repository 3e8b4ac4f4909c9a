// ModelInfer: one unary call state machine (CREATE -> PROCESS -> FINISH). The completion-queue
// thread decodes the request and hands it to InferenceServer::InferAsync; the reply is finished
// from the inference callback (an executor thread, or this thread for early errors and inline
// runs), so a completion-queue thread never waits for a model.
#include <memory>

#include "frontends/grpc/grpc_call.h"
#include "frontends/grpc/grpc_codec.h"
#include "model_config.pb.h"

namespace nereid::grpc_frontend {
namespace {

namespace pb = inference;

class InferCall final : public CqEvent {
 public:
  static void Listen(std::shared_ptr<GrpcShared> shared) {
    if (!shared->accepting.load()) return;
    GateScope gate(shared->gate);
    if (!gate) return;
    auto* call = new InferCall(std::move(shared));
    call->shared_->service.RequestModelInfer(&call->ctx_, call->request_.get(), &call->responder_,
                                             call->shared_->cq, call->shared_->cq, call);
  }

  void OnEvent(bool ok) override {
    if (finishing_ || !ok) {  // FINISH done, or no call was matched (shutdown)
      delete this;
      return;
    }
    Listen(shared_);
    Process();
  }

 private:
  explicit InferCall(std::shared_ptr<GrpcShared> shared)
      : shared_(std::move(shared)),
        request_(std::make_shared<pb::ModelInferRequest>()),
        responder_(&ctx_) {}
  ~InferCall() = default;

  // After InferAsync is called `this` may already be finished and deleted: touch no member.
  void Process() {
    InferenceServer* server = shared_->server;
    StatusOr<std::unique_ptr<InferenceRequest>> decoded = Decode(*server);
    if (!decoded.ok()) return Finish(decoded.status());
    InlineSlot slot(shared_->inline_slots);
    server->InferAsync(
        std::move(*decoded),
        [this](StatusOr<std::unique_ptr<InferenceResponse>> result) {
          if (!result.ok()) return Finish(result.status());
          EncodeModelInferResponse(**result, &response_);
          result->reset();  // free the request's memory before replying
          Finish(Status::Ok());
        },
        slot.options());
  }

  StatusOr<std::unique_ptr<InferenceRequest>> Decode(InferenceServer& server) {
    std::shared_ptr<const pb::ModelInferRequest> message = std::move(request_);
    NEREID_ASSIGN_OR_RETURN(int64_t version, ParseModelVersion(message->model_version()));
    NEREID_ASSIGN_OR_RETURN(auto config, server.GetModelConfig(message->model_name(), version));
    if (config->model_transaction_policy().decoupled()) {
      return Unsupported("ModelInfer RPC doesn't support models with decoupled transaction policy");
    }
    return DecodeModelInferRequest(std::move(message));
  }

  // Any thread. The last thing done with `this`: the FINISH event may delete it at once.
  void Finish(const Status& status) {
    std::shared_ptr<GrpcShared> shared = shared_;
    finishing_ = true;
    GateScope gate(shared->gate);
    if (gate) responder_.Finish(response_, ToGrpcStatus(status), this);
  }

  std::shared_ptr<GrpcShared> shared_;
  grpc::ServerContext ctx_;
  std::shared_ptr<pb::ModelInferRequest> request_;  // moved into the InferenceRequest
  pb::ModelInferResponse response_;
  grpc::ServerAsyncResponseWriter<pb::ModelInferResponse> responder_;
  bool finishing_ = false;
};

}  // namespace

void ListenModelInfer(const std::shared_ptr<GrpcShared>& shared) { InferCall::Listen(shared); }

}  // namespace nereid::grpc_frontend
