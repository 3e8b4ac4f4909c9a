// OrderedDelivery: runs response callbacks in a given order (preserve_ordering) even when the
// responses complete out of order, e.g. on different instances. Each response carries the
// sequence number it was given when it left the scheduler's queue (0, 1, 2, ... with no gaps);
// a response that arrives early is parked until every earlier one has been delivered.
//
// Thread-safety: Deliver may be called from any thread. One thread at a time delivers: the one
// whose response is next, or, when another thread is already delivering, that thread, which
// keeps going while the next response is there. Callbacks run on the delivering thread with no
// lock held (mu_ guards only the bookkeeping), so a callback may enqueue new work, take any lock
// or call Deliver itself (its response is parked and delivered after the callback returns).
// Callbacks must not throw.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>

#include "common/thread_annotations.h"
#include "core/request/inference_request.h"

namespace nereid {

class OrderedDelivery {
 public:
  using Result = StatusOr<std::unique_ptr<InferenceResponse>>;

  // Delivers response `seq`: calls `done` now, or parks it until every earlier response has been
  // delivered (then it runs on whichever thread delivers those).
  void Deliver(uint64_t seq, InferCallback& done, Result&& result) EXCLUDES(mu_);

 private:
  Mutex mu_;
  uint64_t next_ GUARDED_BY(mu_) = 0;        // the sequence number to deliver next
  bool delivering_ GUARDED_BY(mu_) = false;  // a thread is running callbacks
  std::map<uint64_t, std::pair<InferCallback, Result>> parked_ GUARDED_BY(mu_);
};

}  // namespace nereid
