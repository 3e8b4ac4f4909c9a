// A hint from code that completes many requests in a row (an executor finishing a batch) to the
// code that receives the completions: "more are coming on this thread; hand them on together".
// A frontend whose reply path wakes another thread per completion (the HTTP server posts each
// reply to its I/O threads) can queue the replies while a scope is open and wake its threads once
// when it closes, instead of once per request.
//
// Thread-safety: all state is thread-local; a scope and the work deferred into it belong to the
// thread that opened it.
#pragma once

#include <functional>

namespace nereid {

class CompletionBatch {
 public:
  // Opens a scope on this thread. Scopes nest; only the outermost one flushes.
  CompletionBatch();
  // Runs what was deferred into the outermost scope, in the order it was deferred (including
  // anything deferred while flushing).
  ~CompletionBatch();
  CompletionBatch(const CompletionBatch&) = delete;
  CompletionBatch& operator=(const CompletionBatch&) = delete;

  // True while a scope is open on this thread.
  static bool Active();
  // Inside a scope on this thread: runs `flush` when the outermost scope closes and returns true.
  // Outside a scope: does nothing and returns false (the caller hands on its work at once).
  static bool Defer(std::function<void()> flush);
};

}  // namespace nereid
