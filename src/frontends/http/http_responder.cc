#include "frontends/http/http_responder.h"

#include <type_traits>
#include <utility>
#include <vector>

#include "common/completion_batch.h"
#include "common/unique_function.h"
#include "frontends/http/http_recycler.h"
#include "frontends/http/status_mapping.h"

namespace nereid {
namespace http_detail {
namespace {

// Replies completed on this thread inside a CompletionBatch (an executor finishing a batch),
// per server and I/O loop, handed to each loop in one post when the batch ends: one wake-up per
// loop and batch instead of one per reply, which on a shared core also meant two context
// switches per reply.
struct PendingReplies {
  std::shared_ptr<Gate> gate;
  net::io_context* loop;  // the sessions' (http_io_loops.h); valid while the gate is open
  std::vector<UniqueFunction<void()>> tasks;
};
thread_local std::vector<PendingReplies> pending_replies;

void FlushReplies() {
  std::vector<PendingReplies> all;
  all.swap(pending_replies);
  for (PendingReplies& p : all) {
    MutexLock lock(p.gate->mu);
    if (!p.gate->open) continue;
    net::post(*p.loop, [tasks = std::move(p.tasks)]() {
      for (const auto& task : tasks) task();
    });
  }
}

void QueueReply(const std::shared_ptr<Gate>& gate, net::io_context* loop,
                UniqueFunction<void()> task) {
  if (pending_replies.empty()) CompletionBatch::Defer(&FlushReplies);
  for (PendingReplies& p : pending_replies) {
    if (p.gate == gate && p.loop == loop) return p.tasks.push_back(std::move(task));
  }
  pending_replies.push_back({gate, loop, {}});
  pending_replies.back().tasks.push_back(std::move(task));
}
// Posts responses to the session's loop; see HttpResponder for the contract.
class Responder : public HttpResponder {
 public:
  Responder(std::shared_ptr<Gate> gate, std::weak_ptr<Session> session, uint64_t seq)
      : gate_(std::move(gate)), session_(std::move(session)), seq_(seq) {}

  ~Responder() override {
    if (!sent_.exchange(true)) {
      Post([seq = seq_](Session& s) {
        s.OnResponse(seq, ErrorResponse(500, "request was dropped without a response"));
      });
    }
  }

  void Send(HttpResponse&& response) override {
    if (sent_.exchange(true)) return;
    Post([seq = seq_, r = std::move(response)](Session& s) mutable {
      s.OnResponse(seq, std::move(r));
    });
  }

  bool OnReplyThread() const override {
    std::shared_ptr<Session> s = session_.lock();
    return s != nullptr && s->InStrand();
  }

  void SendDeferred(HttpResponseMaker make) override {
    if (sent_.exchange(true)) return;
    Post([seq = seq_, make = std::move(make)](Session& s) {
      HttpResponse r;
      try {
        r = make();
      } catch (const std::exception& e) {
        r = ErrorResponse(500, e.what());
      } catch (...) {  // sent_ is set: nobody else would answer this request
        r = ErrorResponse(500, "building the reply failed");
      }
      s.OnResponse(seq, std::move(r));
    });
  }

 private:
  template <typename Fn>
  void Post(Fn&& fn) {
    // Already on the session's loop thread (a reply sent from inside the handler, e.g. after
    // inline execution): finish it here, with no trip through the loop's queue.
    if (std::shared_ptr<Session> s = session_.lock(); s != nullptr && s->InStrand()) {
      return fn(*s);
    }
    MutexLock lock(gate_->mu);
    if (!gate_->open) return;
    std::shared_ptr<Session> s = session_.lock();
    if (s == nullptr) return;
    if (CompletionBatch::Active()) {
      // Runs on the session's own loop thread when the batch ends.
      net::io_context* loop = &s->executor().context();
      QueueReply(gate_, loop, [s = std::move(s), fn = std::forward<Fn>(fn)]() mutable {
        RunGuarded(*s, [&] { fn(*s); });
      });
      return;
    }
    const Executor ex = s->executor();
    net::post(ex, [s = std::move(s), fn = std::forward<Fn>(fn)]() mutable {
      RunGuarded(*s, [&] { fn(*s); });
    });
  }

  std::shared_ptr<Gate> gate_;
  std::weak_ptr<Session> session_;
  uint64_t seq_;
  std::atomic<bool> sent_{false};
};
}  // namespace

std::shared_ptr<HttpResponder> NewResponder(std::shared_ptr<Gate> gate,
                                            std::weak_ptr<Session> session, uint64_t seq) {
  return std::allocate_shared<Responder>(RecyclingAllocator<Responder>(), std::move(gate),
                                         std::move(session), seq);
}

}  // namespace http_detail
}  // namespace nereid
