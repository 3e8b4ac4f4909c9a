// What a thread that runs jobs inline is holding up meanwhile (issue 21 goal 6).
//
// An HTTP I/O thread that runs a model inline, and then drains the jobs queued behind it
// (default_scheduler.h), serves none of its loop's other connections until it returns: on a
// loop whose other connections have requests waiting, every extra drained job is their latency.
// The frontend says so for the length of a handler call with a ScopedInlineCaller; the scheduler
// asks InlineCallerOthersWaiting() before it takes on more work that is not the caller's own.
//
// Thread-safety: the current caller is thread-local; a probe is asked only on the thread that
// installed it, while its scope is open.
#pragma once

namespace nereid {

class InlineCaller {
 public:
  virtual ~InlineCaller() = default;
  // Whether other work of this thread's own (e.g. another connection of its loop with bytes
  // readable) waits while it runs jobs inline. May cost a system call: ask once per decision.
  virtual bool OthersWaiting() const = 0;
};

// Installs `caller` as this thread's inline caller until destroyed (nests; restores the previous
// one). `caller` may be null (nothing to hold up) and must outlive the scope.
class ScopedInlineCaller {
 public:
  explicit ScopedInlineCaller(const InlineCaller* caller);
  ~ScopedInlineCaller();
  ScopedInlineCaller(const ScopedInlineCaller&) = delete;
  ScopedInlineCaller& operator=(const ScopedInlineCaller&) = delete;

 private:
  const InlineCaller* previous_;
};

// The current thread's caller's answer; false on a thread without one (an executor, a test).
bool InlineCallerOthersWaiting();

}  // namespace nereid
