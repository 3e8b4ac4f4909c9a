#include "core/server/request_completion.h"

#include <new>
#include <utility>

#include "common/block_recycler.h"

namespace nereid {
namespace {

using Result = StatusOr<std::unique_ptr<InferenceResponse>>;

struct Completion {
  Completion(Admission::Ticket&& t, std::shared_ptr<ModelVersion> v, bool c, ShmOutputTargets&& s,
             InferCallback&& d)
      : ticket(std::move(t)),
        version(std::move(v)),
        shm(std::move(s)),
        done(std::move(d)),
        classify(c) {}

  void Complete(Result&& result) {
    version->FinishResult(classify, &result);
    if (result.ok() && !shm.empty()) {
      if (Status s = WriteShmOutputs(shm, result->get()); !s.ok()) return done(s);
    }
    done(std::move(result));
  }

  // Destroyed in reverse: done, shm, version, then the ticket.
  Admission::Ticket ticket;
  std::shared_ptr<ModelVersion> version;
  ShmOutputTargets shm;
  InferCallback done;
  bool classify;
};

// What the InferCallback holds: one pointer, so it lives inline in the callback.
class Handle {
 public:
  explicit Handle(Completion* c) : c_(c) {}
  Handle(Handle&& other) noexcept : c_(std::exchange(other.c_, nullptr)) {}
  Handle& operator=(Handle&&) = delete;
  Handle(const Handle&) = delete;
  ~Handle() {
    if (c_ == nullptr) return;
    c_->~Completion();
    BlockRecycler::Deallocate(c_, sizeof(Completion));
  }
  void operator()(Result result) { c_->Complete(std::move(result)); }

 private:
  Completion* c_;
};

}  // namespace

InferCallback MakeRequestCompletion(Admission::Ticket&& ticket,
                                    std::shared_ptr<ModelVersion> version, bool classify,
                                    ShmOutputTargets&& shm, InferCallback&& done) {
  static_assert(sizeof(Completion) <= BlockRecycler::kMaxBlockBytes);
  void* block = BlockRecycler::Allocate(sizeof(Completion));
  auto* c = ::new (block)
      Completion(std::move(ticket), std::move(version), classify, std::move(shm), std::move(done));
  return Handle(c);
}

}  // namespace nereid
