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

#include "common/block_recycler.h"
#include "common/logging.h"
#include "core/stats/model_stats.h"
#include "frontends/grpc/grpc_arena.h"
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
    if (call->shared_->server->tracer().MaybeEnabled()) call->waitread_start_ns_ = NowNs();
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
      : shared_(std::move(shared)), request_(NewModelInferRequest()), responder_(&ctx_) {}
  ~InferCall() = default;

  void OnNew(bool ok) {
    if (!ok) {  // no call was matched (shutdown): the done notification will not come
      delete this;
      return;
    }
    const uint64_t waitread_end_ns = waitread_start_ns_ != 0 ? NowNs() : 0;
    Listen(shared_);
    if (grpc::Status r = CheckRestricted(*shared_, RestrictedCategory::kInference, ctx_); !r.ok()) {
      GateScope gate(shared_->gate);
      if (gate) responder_.Finish(*response_, r, &finish_hook_);
      return;
    }
    Process(waitread_end_ns);
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
  void OnFinish(bool) {
    if (trace_ != nullptr) {
      trace_->Capture("GRPC_SEND_END", NowNs());
      trace_.reset();
    }
    OnTerminalEvent();
  }

  // FINISH and the done notification may arrive in either order, on two threads: the second
  // deletes the call.
  void OnTerminalEvent() {
    if (terminal_events_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  // After InferAsync is called `this` may already be finished: touch no member.
  void Process(uint64_t waitread_end_ns) {
    InferenceServer* server = shared_->server;
    StatusOr<ServedModel> served = Acquire(*server);
    if (!served.ok()) return Finish(served.status());
    StatusOr<std::unique_ptr<InferenceRequest>> decoded =
        DecodeModelInferRequest(std::move(request_));
    if (!decoded.ok()) return Finish(decoded.status());
    (*decoded)->cancel_token = cancel_;
    if (waitread_end_ns != 0) {  // the trace extension is on: sampled here, as Triton does
      (*decoded)->trace = server->tracer().Sample((*decoded)->model_name);
      if ((*decoded)->trace != nullptr) {
        (*decoded)->trace->Capture("GRPC_WAITREAD_START", waitread_start_ns_);
        (*decoded)->trace->Capture("GRPC_WAITREAD_END", waitread_end_ns);
      }
    }
    InlineSlot slot(shared_->inline_slots);
    InferOptions options = slot.options();
    options.trace_sampled = waitread_end_ns != 0;
    server->InferAsync(
        std::move(*served), std::move(*decoded),
        [this](StatusOr<std::unique_ptr<InferenceResponse>> result) {
          if (!result.ok()) return Finish(result.status());
          if ((*result)->request != nullptr && (*result)->request->trace != nullptr) {
            trace_ = (*result)->request->trace;
            trace_->Capture("GRPC_SEND_START", NowNs());
          }
          EncodeModelInferResponse(**result, response_.get());
          result->reset();  // free the request's memory before replying
          Finish(Status::Ok());
        },
        options);
  }

  // The model the request names, looked up once for the whole call (InferAsync takes it).
  StatusOr<ServedModel> Acquire(InferenceServer& server) {
    NEREID_ASSIGN_OR_RETURN(int64_t version, ParseModelVersion(request_->model_version()));
    NEREID_ASSIGN_OR_RETURN(ServedModel served,
                            server.AcquireModel(request_->model_name(), version));
    if (served.config().model_transaction_policy().decoupled()) {
      return Unsupported("ModelInfer RPC doesn't support models with decoupled transaction policy");
    }
    return served;
  }

  // Any thread. The FINISH event may delete the call at once (when done has arrived).
  void Finish(const Status& status) {
    std::shared_ptr<GrpcShared> shared = shared_;
    GateScope gate(shared->gate);
    if (gate) responder_.Finish(*response_, ToGrpcStatus(status), &finish_hook_);
  }

  std::shared_ptr<GrpcShared> shared_;
  grpc::ServerContext ctx_;
  std::shared_ptr<pb::ModelInferRequest> request_;  // moved into the InferenceRequest
  // Made by the thread that builds the reply (grpc_arena.h).
  LazyArenaMessage<pb::ModelInferResponse, kResponseArenaBlockBytes> response_;
  grpc::ServerAsyncResponseWriter<pb::ModelInferResponse> responder_;
  // From the thread's cache of freed blocks (block_recycler.h), as HTTP's tokens.
  std::shared_ptr<CancelToken> cancel_ =
      std::allocate_shared<CancelToken>(RecyclingAllocator<CancelToken>());
  std::atomic<int> terminal_events_{2};  // FINISH and the done notification
  // Trace extension, only while tracing is on: when the call began waiting for its request, and
  // the sampled request's trace, held until the reply is sent (GRPC_SEND_END).
  uint64_t waitread_start_ns_ = 0;
  std::shared_ptr<trace::Trace> trace_;
  Hook new_hook_{this, &InferCall::OnNew};
  Hook finish_hook_{this, &InferCall::OnFinish};
  Hook done_hook_{this, &InferCall::OnDone};
};

}  // namespace

void ListenModelInfer(const std::shared_ptr<GrpcShared>& shared) { InferCall::Listen(shared); }

}  // namespace nereid::grpc_frontend
