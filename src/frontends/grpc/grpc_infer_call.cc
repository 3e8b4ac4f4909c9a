// ModelInfer: one unary call state machine (CREATE -> PROCESS -> FINISH). The completion-queue
// thread decodes the request and hands it to InferenceServer::InferAsync; the reply is finished
// from the inference callback (an executor thread, or this thread for early errors and inline
// runs), so a completion-queue thread never waits for a model. The done notification
// (AsyncNotifyWhenDone) tells a cancelled call's request that its client gave up.
//
// Lifetime: the call deletes itself when both FINISH and the done notification have arrived (or
// at once when no call was matched).
#include <atomic>
#include <memory>

#include "common/logging.h"
#include "frontends/grpc/grpc_call.h"
#include "frontends/grpc/grpc_codec.h"
#include "model_config.pb.h"

namespace nereid::grpc_frontend {
namespace {

namespace pb = inference;

class InferCall {
 public:
  static void Listen(std::shared_ptr<GrpcShared> shared) {
    if (!shared->accepting.load()) return;
    GateScope gate(shared->gate);
    if (!gate) return;
    auto* call = new InferCall(std::move(shared));
    call->ctx_.AsyncNotifyWhenDone(&call->done_hook_);
    call->shared_->service.RequestModelInfer(&call->ctx_, call->request_.get(), &call->responder_,
                                             call->shared_->cq, call->shared_->cq,
                                             &call->new_hook_);
  }

 private:
  struct Hook final : CqEvent {
    Hook(InferCall* c, void (InferCall::*f)(bool)) : self(c), fn(f) {}
    void OnEvent(bool ok) override { (self->*fn)(ok); }
    InferCall* self;
    void (InferCall::*fn)(bool);
  };

  explicit InferCall(std::shared_ptr<GrpcShared> shared)
      : shared_(std::move(shared)),
        request_(std::make_shared<pb::ModelInferRequest>()),
        responder_(&ctx_) {}
  ~InferCall() = default;

  void OnNew(bool ok) {
    if (!ok) {  // no call was matched (shutdown): the done notification will not come
      delete this;
      return;
    }
    Listen(shared_);
    if (grpc::Status r = CheckRestricted(*shared_, RestrictedCategory::kInference, ctx_); !r.ok()) {
      GateScope gate(shared_->gate);
      if (gate) responder_.Finish(response_, r, &finish_hook_);
      return;
    }
    Process();
  }

  // The client cancelled (or the deadline passed, or the connection broke) before the reply:
  // the request's token tells the scheduler not to run it if it still waits (cancel_token.h).
  void OnDone(bool) {
    if (ctx_.IsCancelled()) {
      cancel_->Cancel();
      LOG_VERBOSE(1, "ModelInfer call cancelled by the client");
    }
    OnTerminalEvent();
  }
  void OnFinish(bool) { OnTerminalEvent(); }

  // FINISH and the done notification may arrive in either order, on two threads: the second
  // deletes the call.
  void OnTerminalEvent() {
    if (terminal_events_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  // After InferAsync is called `this` may already be finished: touch no member.
  void Process() {
    InferenceServer* server = shared_->server;
    StatusOr<std::unique_ptr<InferenceRequest>> decoded = Decode(*server);
    if (!decoded.ok()) return Finish(decoded.status());
    (*decoded)->cancel_token = cancel_;
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

  // Any thread. The FINISH event may delete the call at once (when done has arrived).
  void Finish(const Status& status) {
    std::shared_ptr<GrpcShared> shared = shared_;
    GateScope gate(shared->gate);
    if (gate) responder_.Finish(response_, ToGrpcStatus(status), &finish_hook_);
  }

  std::shared_ptr<GrpcShared> shared_;
  grpc::ServerContext ctx_;
  std::shared_ptr<pb::ModelInferRequest> request_;  // moved into the InferenceRequest
  pb::ModelInferResponse response_;
  grpc::ServerAsyncResponseWriter<pb::ModelInferResponse> responder_;
  std::shared_ptr<CancelToken> cancel_ = std::make_shared<CancelToken>();
  std::atomic<int> terminal_events_{2};  // FINISH and the done notification
  Hook new_hook_{this, &InferCall::OnNew};
  Hook finish_hook_{this, &InferCall::OnFinish};
  Hook done_hook_{this, &InferCall::OnDone};
};

}  // namespace

void ListenModelInfer(const std::shared_ptr<GrpcShared>& shared) { InferCall::Listen(shared); }

}  // namespace nereid::grpc_frontend
