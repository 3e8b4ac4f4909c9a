// The per-destination half of a CompletionBatch: code that hands work to other threads (a
// frontend posting replies to its I/O threads or completion queue) groups it per destination
// while a scope is open on this thread, and hands each destination all of its work in one call
// when the outermost scope closes: one wake-up per destination and batch instead of one per reply.
//
//   BatchedHandoff<Sink, Post>::Queue(sink, task): inside a scope, keeps `task` under `sink` and
//   returns true; when the scope closes, Post(sink, tasks) is called once per sink, sinks and
//   tasks in the order they were first queued. Outside a scope it keeps nothing and returns
//   false: the caller hands on its task at once.
//
// Sink: a copyable value compared with == (e.g. a shared_ptr to the destination's state).
// Thread-safety: thread-local, like CompletionBatch; Post runs on the thread that queued.
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "common/completion_batch.h"

namespace nereid {

template <typename Sink, void (*Post)(const Sink& sink, std::vector<std::function<void()>> tasks)>
class BatchedHandoff {
 public:
  static bool Queue(const Sink& sink, std::function<void()> task) {
    if (!CompletionBatch::Active()) return false;
    std::vector<Entry>& pending = Pending();
    if (pending.empty()) CompletionBatch::Defer(&Flush);
    for (Entry& e : pending) {
      if (e.sink == sink) {
        e.tasks.push_back(std::move(task));
        return true;
      }
    }
    pending.push_back(Entry{sink, {}});
    pending.back().tasks.push_back(std::move(task));
    return true;
  }

 private:
  struct Entry {
    Sink sink;
    std::vector<std::function<void()>> tasks;
  };

  static std::vector<Entry>& Pending() {
    thread_local std::vector<Entry> pending;
    return pending;
  }

  // Runs when the scope closes (still inside it: a Post that queues more starts a new round).
  static void Flush() {
    std::vector<Entry> all;
    all.swap(Pending());
    for (Entry& e : all) Post(e.sink, std::move(e.tasks));
  }
};

}  // namespace nereid
