// StartReply (grpc_call.h): the replies of one executed batch reach a completion-queue thread
// through one alarm, not one completion-queue wake-up each.
#include <grpcpp/alarm.h>

#include <functional>
#include <memory>
#include <vector>

#include "common/batched_handoff.h"
#include "frontends/grpc/grpc_call.h"

namespace nereid::grpc_frontend {
namespace {

// An alarm due at once: its event runs the batch's replies on a completion-queue thread, then
// deletes it.
class ReplyAlarm final : public CqEvent {
 public:
  explicit ReplyAlarm(std::vector<std::function<void()>> tasks) : tasks_(std::move(tasks)) {}
  // Call inside the server's gate.
  void Start(grpc::CompletionQueue* cq) { alarm_.Set(cq, gpr_now(GPR_CLOCK_MONOTONIC), this); }
  void OnEvent(bool) override {
    for (const auto& task : tasks_) task();
    delete this;
  }

 private:
  ~ReplyAlarm() = default;
  grpc::Alarm alarm_;
  std::vector<std::function<void()>> tasks_;
};

void PostReplies(const std::shared_ptr<GrpcShared>& shared,
                 std::vector<std::function<void()>> tasks) {
  {
    GateScope gate(shared->gate);
    if (gate) {
      (new ReplyAlarm(std::move(tasks)))->Start(shared->cq);
      return;
    }
  }
  // Stopping: no alarm may be set. Each task checks the gate itself (and skips its operation).
  for (const auto& task : tasks) task();
}
using ReplyBatch = BatchedHandoff<std::shared_ptr<GrpcShared>, &PostReplies>;

}  // namespace

void QueueReply(const std::shared_ptr<GrpcShared>& shared, std::function<void()> start) {
  if (!ReplyBatch::Queue(shared, std::move(start))) start();
}

}  // namespace nereid::grpc_frontend
