// ModelStreamInfer: one bidirectional stream. Requests are read one after another, each is handed
// to InferAsync before the next Read starts (so they reach the scheduler in stream order; a Read
// is outstanding while earlier requests run), and the responses are written one Write at a time:
// a non-decoupled model's in request order (as Triton's stream handler does), a decoupled model's
// as they come (each request's own responses keep their order). Responses waiting for their Write
// are bounded by --grpc-max-response-pool-size: at the bound, a decoupled model's sender waits
// until the client reads (back-pressure instead of memory). An error becomes a
// ModelStreamInferResponse with `error_message` and the stream goes on, unless the client sent the
// `triton_grpc_error: true` header: then the stream ends with that error as its gRPC status.
//
// Lifetime: the call deletes itself when the done notification has arrived and no Read, Write,
// Finish or inference is outstanding. The done notification can arrive (on another
// completion-queue thread) before OnNew has started the first Read: until then the call counts
// as reading. A client that cancels or disconnects mid-request makes reads and writes fail; the
// stream's cancel token (shared by all its requests, cancel_token.h) is then set, so requests
// still queued in a scheduler are dropped (answered CANCELLED) instead of executed; the ones
// already executing complete and their results are dropped.
// The read and write sides are one state machine each (grpc_call_state.h), moved only through
// Move under `mu_`.
// Thread-safety: every state change happens under `mu_` (completion-queue threads and executor
// threads); async operations are started under it (they never block).
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <memory>
#include <optional>

#include "common/logging.h"
#include "common/thread_annotations.h"
#include "frontends/grpc/grpc_arena.h"
#include "frontends/grpc/grpc_call.h"
#include "frontends/grpc/grpc_codec.h"

namespace nereid::grpc_frontend {
namespace {

namespace pb = inference;

class StreamCall {
 public:
  static void Listen(std::shared_ptr<GrpcShared> shared) {
    if (!shared->accepting.load()) return;
    GateScope gate(shared->gate);
    if (!gate) return;
    auto* call = new StreamCall(std::move(shared));
    call->ctx_.AsyncNotifyWhenDone(&call->done_hook_);
    call->shared_->service.RequestModelStreamInfer(&call->ctx_, &call->stream_, call->shared_->cq,
                                                   call->shared_->cq, &call->new_hook_);
  }

 private:
  struct Hook final : CqEvent {
    Hook(StreamCall* s, void (StreamCall::*f)(bool)) : self(s), fn(f) {}
    void OnEvent(bool ok) override { (self->*fn)(ok); }
    StreamCall* self;
    void (StreamCall::*fn)(bool);
  };

  // One request's place in the response order.
  struct Slot {
    bool ready = false;
    bool skip = false;                       // a flags-only FINAL the client did not ask to see
    bool partial = false;                    // a decoupled response before FINAL (pool-counted)
    bool decoupled = false;                  // its request's model is decoupled
    std::optional<grpc::Status> end_status;  // triton_grpc_error: end the stream with this
    // The request's model name and ID, for its error responses; set before its inference starts
    // (so the completion callbacks capture only `this` and the slot: no allocation).
    std::string model;
    std::string id;
    // Made by the thread that builds the response (grpc_arena.h).
    LazyArenaMessage<pb::ModelStreamInferResponse, kResponseArenaBlockBytes> message;
  };

  explicit StreamCall(std::shared_ptr<GrpcShared> shared)
      : shared_(std::move(shared)), stream_(&ctx_) {}

  void OnNew(bool ok) {
    if (!ok) {  // never started: the done notification will not come, nothing else is pending
      delete this;
      return;
    }
    Listen(shared_);
    const auto& md = ctx_.client_metadata();
    auto it = md.find("triton_grpc_error");
    end_on_error_ = it != md.end() && it->second == "true";
    bool remove = false;
    {
      MutexLock lock(mu_);
      if (grpc::Status r = CheckRestricted(*shared_, RestrictedCategory::kInference, ctx_);
          !r.ok()) {
        FailLocked();  // end the stream at once, reading nothing
        Move(read_, StreamReadState::kDone);
        end_status_ = r;
        PumpLocked();
        remove = ShouldDeleteLocked();
      } else {
        StartReadLocked();
      }
    }
    if (remove) delete this;
  }

  void StartReadLocked() REQUIRES(mu_) {
    next_ = NewModelInferRequest();
    GateScope gate(shared_->gate);
    if (!gate) {  // stopping: abandoned with the process
      Move(read_, StreamReadState::kAbandoned);
      return;
    }
    Move(read_, StreamReadState::kReading);
    stream_.Read(next_.get(), &read_hook_);
  }

  void OnRead(bool ok) {
    std::shared_ptr<pb::ModelInferRequest> message;
    Slot* slot = nullptr;
    {
      MutexLock lock(mu_);
      if (!ok || failed_) {  // half-closed by the client, cancelled, or ended by an error
        Move(read_, StreamReadState::kDone);
        PumpLocked();
        if (!ShouldDeleteLocked()) return;
      } else {
        message = std::move(next_);
        slot = queue_.emplace_back(std::make_unique<Slot>()).get();
        ++inflight_;
        Move(read_, StreamReadState::kHandling);  // keeps the call alive
      }
    }
    if (slot == nullptr) {
      delete this;
      return;
    }
    // The next Read starts only once this request has been handed to InferAsync, so the requests
    // of one stream reach their scheduler in stream order (a sequence's requests depend on it).
    Infer(std::move(message), slot);
    bool remove = false;
    {
      MutexLock lock(mu_);
      if (failed_) {
        Move(read_, StreamReadState::kDone);
        PumpLocked();
        remove = ShouldDeleteLocked();
      } else {
        StartReadLocked();
      }
    }
    if (remove) delete this;
  }

  void Infer(std::shared_ptr<pb::ModelInferRequest> message, Slot* slot) {
    slot->model = message->model_name();
    slot->id = message->id();
    StatusOr<std::unique_ptr<InferenceRequest>> request =
        DecodeModelInferRequest(std::move(message));
    if (!request.ok()) return Complete(slot, request.status());
    StatusOr<ServedModel> served =
        shared_->server->AcquireModel((*request)->model_name, (*request)->model_version);
    if (!served.ok()) return Complete(slot, served.status());
    // Set before InferAsync; Complete reads it after the inference (happens-after).
    slot->decoupled = served->config().model_transaction_policy().decoupled();
    (*request)->cancel_token = cancel_;
    const bool empty_final =
        GetBool((*request)->parameters, kEnableEmptyFinalResponse).value_or(false);
    // A decoupled model's responses before its FINAL one (inference_request.h).
    (*request)->on_response = [this, slot](StatusOr<std::unique_ptr<InferenceResponse>> result) {
      Partial(slot, std::move(result));
    };
    InlineSlot inline_slot(shared_->inline_slots);
    shared_->server->InferAsync(
        std::move(*served), std::move(*request),
        [this, slot, empty_final](StatusOr<std::unique_ptr<InferenceResponse>> result) {
          if (!result.ok()) return Complete(slot, result.status());
          if ((*result)->empty_final && !empty_final) {
            slot->skip = true;  // a flags-only FINAL is written only when asked for
          } else {
            EncodeModelInferResponse(**result, slot->message->mutable_infer_response());
            SetFinal(slot->message.get(), true);
          }
          result->reset();
          Complete(slot, Status::Ok());
        },
        inline_slot.options());
  }

  static void SetFinal(pb::ModelStreamInferResponse* message, bool final) {
    (*message->mutable_infer_response()->mutable_parameters())[std::string(kFinalResponseParameter)]
        .set_bool_param(final);
  }

  // Any thread (never concurrently for one request): a response of `slot`'s request before its
  // FINAL one. It is queued before the request's slot, so a request's responses keep their order,
  // and ahead of earlier requests still running, so the responses of requests interleave.
  void Partial(Slot* slot, StatusOr<std::unique_ptr<InferenceResponse>> result) {
    auto partial = std::make_unique<Slot>();
    if (!result.ok()) {
      if (end_on_error_) {
        partial->end_status = ToGrpcStatus(result.status());
      } else {
        partial->message->set_error_message(result.status().message());
        partial->message->mutable_infer_response()->set_model_name(slot->model);
        partial->message->mutable_infer_response()->set_id(slot->id);
        SetFinal(partial->message.get(), false);
      }
    } else {
      EncodeModelInferResponse(**result, partial->message->mutable_infer_response());
      SetFinal(partial->message.get(), false);
    }
    partial->ready = true;
    partial->partial = true;
    UniqueLock lock(mu_);
    // Back-pressure: this (the model's sending) thread waits while the pool is full; a broken or
    // ended stream wakes it (failed_).
    while (!failed_ && buffered_ >= shared_->max_response_pool_size) lock.Wait(pool_space_);
    if (failed_) return;  // nobody reads any more
    ++buffered_;
    // Before the request's own slot and before the first slot still waiting for its request, so
    // it is written as soon as the responses already queued are, whatever earlier requests do.
    auto at = queue_.begin();
    while (at != queue_.end() && at->get() != slot && (*at)->ready) ++at;
    queue_.insert(at, std::move(partial));
    PumpLocked();
  }

  // Any thread: `slot` is final; write what is ready in order.
  void Complete(Slot* slot, const Status& status) {
    if (!status.ok()) {
      if (end_on_error_) {
        slot->end_status = ToGrpcStatus(status);
      } else {
        slot->message->set_error_message(status.message());
        slot->message->mutable_infer_response()->set_model_name(slot->model);
        slot->message->mutable_infer_response()->set_id(slot->id);
        SetFinal(slot->message.get(), true);
      }
    }
    {
      MutexLock lock(mu_);
      slot->ready = true;
      --inflight_;
      if (slot->decoupled) MoveAheadLocked(slot);
      PumpLocked();
      if (!ShouldDeleteLocked()) return;
    }
    delete this;
  }

  // A decoupled request's FINAL response does not wait for earlier requests (Triton writes each
  // response as it comes): `slot` moves before the first slot still waiting, after every
  // response already ready, so its own earlier responses stay ahead of it. A rotation, not an
  // erase and an insert: erasing from the middle of a deque invalidates `at` (a stale `at` put an
  // empty slot in the queue, and PumpLocked crashed on it).
  void MoveAheadLocked(Slot* slot) REQUIRES(mu_) {
    auto at = queue_.begin();
    while (at != queue_.end() && at->get() != slot && (*at)->ready) ++at;
    if (at == queue_.end() || at->get() == slot) return;
    auto own = std::find_if(at, queue_.end(), [slot](const auto& s) { return s.get() == slot; });
    if (own != queue_.end()) std::rotate(at, own, std::next(own));
  }

  // Pops the front slot; a pooled response frees a place for a waiting sender.
  void PopFrontLocked() REQUIRES(mu_) {
    if (queue_.front()->partial) {
      --buffered_;
      pool_space_.notify_all();
    }
    queue_.pop_front();
  }

  // Nothing more will be written: wake the senders waiting for room.
  void FailLocked() REQUIRES(mu_) {
    failed_ = true;
    pool_space_.notify_all();
  }

  // Starts the next Write (or the Finish) when nothing is being written.
  void PumpLocked() REQUIRES(mu_) {
    const StreamWriteState w = write_.state();
    if (WriteBusy(w) || w == StreamWriteState::kFinished) return;
    while (!queue_.empty() && queue_.front()->ready) {
      Slot& front = *queue_.front();
      if (failed_ || front.skip) {  // the client is gone or the stream ended: drop the result
        PopFrontLocked();
        continue;
      }
      if (front.end_status) {
        end_status_ = *front.end_status;
        FailLocked();
        PopFrontLocked();
        continue;
      }
      if (w == StreamWriteState::kBroken) return;  // failed_ drops everything above
      GateScope gate(shared_->gate);
      if (!gate) return;
      Move(write_, StreamWriteState::kWriting);
      stream_.Write(*front.message, &write_hook_);
      return;
    }
    const bool ended_by_error = end_status_.has_value();
    const bool all_done =
        read_.state() == StreamReadState::kDone && queue_.empty() && inflight_ == 0;
    if (w == StreamWriteState::kBroken || !(ended_by_error || all_done)) return;
    GateScope gate(shared_->gate);
    if (!gate) return;
    Move(write_, StreamWriteState::kFinishing);
    stream_.Finish(end_status_.value_or(grpc::Status::OK), &finish_hook_);
  }

  void OnWrite(bool ok) {
    {
      MutexLock lock(mu_);
      PopFrontLocked();
      if (write_.state() == StreamWriteState::kBrokenWriting) {
        Move(write_, StreamWriteState::kBroken);  // cancelled while this Write was outstanding
      } else if (!ok) {  // the call is broken: no Finish either, and nobody wants the other answers
        FailLocked();
        Move(write_, StreamWriteState::kBroken);
        cancel_->Cancel();
      } else {
        Move(write_, StreamWriteState::kIdle);
      }
      PumpLocked();
      if (!ShouldDeleteLocked()) return;
    }
    delete this;
  }

  void OnFinish(bool) {
    {
      MutexLock lock(mu_);
      Move(write_, StreamWriteState::kFinished);
      if (!ShouldDeleteLocked()) return;
    }
    delete this;
  }

  void OnDone(bool) {
    const bool cancelled = ctx_.IsCancelled();
    if (cancelled) {
      cancel_->Cancel();
      LOG_VERBOSE(1, "ModelStreamInfer stream cancelled by the client");
    }
    {
      MutexLock lock(mu_);
      if (cancelled) {
        FailLocked();
        // A broken call is never finished; a Finish already started still reports back.
        if (write_.state() == StreamWriteState::kIdle) {
          Move(write_, StreamWriteState::kBroken);
        } else if (write_.state() == StreamWriteState::kWriting) {
          Move(write_, StreamWriteState::kBrokenWriting);
        }
      }
      done_ = true;
      PumpLocked();
      if (!ShouldDeleteLocked()) return;
    }
    delete this;
  }

  bool ShouldDeleteLocked() const REQUIRES(mu_) {
    return done_ && !ReadBusy(read_.state()) && !WriteBusy(write_.state()) && inflight_ == 0;
  }

  std::shared_ptr<GrpcShared> shared_;
  grpc::ServerContext ctx_;
  grpc::ServerAsyncReaderWriter<pb::ModelStreamInferResponse, pb::ModelInferRequest> stream_;
  Hook new_hook_{this, &StreamCall::OnNew};
  Hook read_hook_{this, &StreamCall::OnRead};
  Hook write_hook_{this, &StreamCall::OnWrite};
  Hook finish_hook_{this, &StreamCall::OnFinish};
  Hook done_hook_{this, &StreamCall::OnDone};
  bool end_on_error_ = false;  // set before the first Read, then read-only
  const std::shared_ptr<CancelToken> cancel_ = std::make_shared<CancelToken>();

  Mutex mu_;
  // Buffer of the outstanding Read.
  std::shared_ptr<pb::ModelInferRequest> next_ GUARDED_BY(mu_);
  // Responses not yet written, in request order.
  std::deque<std::unique_ptr<Slot>> queue_ GUARDED_BY(mu_);
  std::optional<grpc::Status> end_status_ GUARDED_BY(mu_);
  int inflight_ GUARDED_BY(mu_) = 0;  // inferences whose callback has not run
  // kStarting counts as reading: the done notification may arrive on another thread while OnNew
  // has not yet started the first Read, and must not delete the call under it.
  Lifecycle<StreamReadState> read_ GUARDED_BY(mu_) = Lifecycle(StreamReadState::kStarting);
  Lifecycle<StreamWriteState> write_ GUARDED_BY(mu_) = Lifecycle(StreamWriteState::kIdle);
  bool failed_ GUARDED_BY(mu_) = false;  // no more responses will be written (set by FailLocked)
  // Partial responses in queue_ (ready, not yet written): at most max_response_pool_size.
  int buffered_ GUARDED_BY(mu_) = 0;
  std::condition_variable pool_space_;  // buffered_ went down or failed_ was set
  bool done_ GUARDED_BY(mu_) = false;   // the done notification arrived
};

}  // namespace

void ListenModelStreamInfer(const std::shared_ptr<GrpcShared>& shared) {
  StreamCall::Listen(shared);
}

}  // namespace nereid::grpc_frontend
