// Internal to the gRPC frontend: the state shared by the server and every call object, the
// completion-queue event interface and the generic unary call state machine. Included only by
// the frontend's .cc files (it pulls in grpc++).
//
// Call objects own themselves: each is created listening for one RPC (CREATE), handles it when
// the completion queue reports it (PROCESS, after first spawning its successor), and deletes
// itself when its last completion-queue event arrives (FINISH). The tag of every async operation
// is a CqEvent*.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <optional>
#include <thread>
#include <type_traits>

#include "common/restricted_features.h"
#include "core/server/inference_server.h"
#include "frontends/grpc/grpc_call_state.h"
#include "grpc_service.grpc.pb.h"
#include "health.grpc.pb.h"
#include "nereid/status.h"

namespace nereid::grpc_frontend {

// What a completion-queue tag points to. OnEvent runs on a completion-queue thread.
class CqEvent {
 public:
  virtual void OnEvent(bool ok) = 0;

 protected:
  ~CqEvent() = default;
};

// Guards starting async operations against the completion queue's shutdown: starting an
// operation on a shut-down queue aborts the process. Enter/Exit are lock-free (sequentially
// consistent: Close() sees every Enter that did not see `closed_`). Thread-safe.
class CqGate {
 public:
  bool Enter() {
    active_.fetch_add(1);
    if (!closed_.load()) return true;
    active_.fetch_sub(1);
    return false;
  }
  void Exit() { active_.fetch_sub(1); }
  // After Close returns no operation is being started and none will be.
  void Close() {
    closed_.store(true);
    while (active_.load() != 0) std::this_thread::yield();
  }

 private:
  std::atomic<bool> closed_{false};
  std::atomic<int> active_{0};
};

// RAII Enter/Exit. When the gate is closed (the server is stopping) the caller skips the
// operation and abandons its call object: the process is exiting.
class GateScope {
 public:
  explicit GateScope(CqGate& gate) : gate_(gate), entered_(gate.Enter()) {}
  ~GateScope() {
    if (entered_) gate_.Exit();
  }
  explicit operator bool() const { return entered_; }

 private:
  CqGate& gate_;
  bool entered_;
};

// Everything a call needs, shared (shared_ptr) by the server and every call, so inference
// callbacks that run after the server object is gone still find the gate.
struct GrpcShared {
  InferenceServer* server = nullptr;
  grpc::ServerCompletionQueue* cq = nullptr;
  inference::GRPCInferenceService::AsyncService service;
  grpc::health::v1::Health::AsyncService health;
  CqGate gate;
  std::atomic<bool> accepting{true};       // false once shutdown began: no new listeners
  std::atomic<int> inline_slots{0};        // completion-queue threads that may run a model inline
  RestrictedFeatures restricted;           // --grpc-restricted-protocol; read-only once serving
  int max_response_pool_size = INT32_MAX;  // GrpcServerOptions; read-only once serving
};

// Triton's restricted-protocol check of one call: OK when `category` is not restricted or the
// call's metadata has the key with the exact value; else UNAVAILABLE "This protocol is
// restricted, expecting header '<key>'". Call on the completion-queue thread that got the call.
grpc::Status CheckRestricted(const GrpcShared& shared, std::optional<RestrictedCategory> category,
                             const grpc::ServerContext& ctx);

// REFERENCE.md §1.3 (kPermissionDenied -> UNAVAILABLE, Triton's restricted-protocol answer).
grpc::Status ToGrpcStatus(const Status& status);

// The InferOptions of one InferAsync call from a completion-queue thread: inline execution only
// while a slot is free, so at least one thread keeps serving the queue. Release after InferAsync.
class InlineSlot {
 public:
  explicit InlineSlot(std::atomic<int>& slots) : slots_(slots) {
    taken_ = slots_.fetch_sub(1, std::memory_order_acq_rel) > 0;
    if (!taken_) slots_.fetch_add(1, std::memory_order_acq_rel);
  }
  ~InlineSlot() {
    if (taken_) slots_.fetch_add(1, std::memory_order_acq_rel);
  }
  InferOptions options() const { return InferOptions{taken_}; }

 private:
  std::atomic<int>& slots_;
  bool taken_;
};

// A unary RPC answered synchronously on the completion-queue thread (health, metadata, config,
// and the RPCs answered UNIMPLEMENTED).
template <typename Service, typename Req, typename Resp>
class UnaryCall final : public CqEvent {
 public:
  using RequestMethod = void (Service::*)(grpc::ServerContext*, Req*,
                                          grpc::ServerAsyncResponseWriter<Resp>*,
                                          grpc::CompletionQueue*, grpc::ServerCompletionQueue*,
                                          void*);
  using Handler = grpc::Status (*)(InferenceServer& server, const Req& request, Resp* response);

  // Starts listening for the next call of this RPC (no-op once shutdown began).
  // `category`: the restricted-protocol group the RPC belongs to (nullopt: none).
  static void Listen(std::shared_ptr<GrpcShared> shared, Service* service, RequestMethod method,
                     Handler handler, std::optional<RestrictedCategory> category) {
    if (!shared->accepting.load()) return;
    GateScope gate(shared->gate);
    if (!gate) return;
    auto* call = new UnaryCall(std::move(shared), service, method, handler, category);
    (service->*method)(&call->ctx_, &call->request_, &call->responder_, call->shared_->cq,
                       call->shared_->cq, call);
  }

  void OnEvent(bool ok) override {
    if (stage_.state() == UnaryStage::kFinishing || !ok) {  // FINISH done, or no call matched
      delete this;
      return;
    }
    Move(stage_, UnaryStage::kProcessing);
    Listen(shared_, service_, method_, handler_, category_);
    grpc::Status status = CheckRestricted(*shared_, category_, ctx_);
    if (!status.ok() && std::is_same_v<Service, grpc::health::v1::Health::AsyncService>) {
      // Triton's grpc.health.v1 Check words its refusal differently.
      status = grpc::Status(status.error_code(), "Missing or mismatched restricted header");
    }
    if (status.ok()) status = handler_(*shared_->server, request_, &response_);
    Move(stage_, UnaryStage::kFinishing);
    GateScope gate(shared_->gate);
    if (gate) responder_.Finish(response_, status, this);
  }

 private:
  UnaryCall(std::shared_ptr<GrpcShared> shared, Service* service, RequestMethod method,
            Handler handler, std::optional<RestrictedCategory> category)
      : shared_(std::move(shared)),
        service_(service),
        method_(method),
        handler_(handler),
        category_(category),
        responder_(&ctx_) {}
  ~UnaryCall() = default;

  std::shared_ptr<GrpcShared> shared_;
  Service* service_;
  RequestMethod method_;
  Handler handler_;
  std::optional<RestrictedCategory> category_;
  grpc::ServerContext ctx_;
  Req request_;
  Resp response_;
  grpc::ServerAsyncResponseWriter<Resp> responder_;
  Lifecycle<UnaryStage> stage_{UnaryStage::kListening};
};

// Start one listener per RPC. Called once, before the completion-queue threads run.
void ListenUnaryCalls(const std::shared_ptr<GrpcShared>& shared);
void ListenModelInfer(const std::shared_ptr<GrpcShared>& shared);
void ListenRepositoryCalls(const std::shared_ptr<GrpcShared>& shared);
void ListenModelStreamInfer(const std::shared_ptr<GrpcShared>& shared);

}  // namespace nereid::grpc_frontend
