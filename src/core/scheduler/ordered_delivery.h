// OrderedDelivery: runs response callbacks in a given order (preserve_ordering) even when the
// responses complete out of order, e.g. on different instances. Each response carries the
// sequence number it was given when it left the scheduler's queue (0, 1, 2, ... with no gaps);
// a response that arrives early is parked until every earlier one has been delivered.
//
// Thread-safety: Deliver may be called from any thread. Callbacks run under the internal mutex,
// on the thread that delivers the response that unblocks them; a callback may enqueue new work
// (take the scheduler's own lock) but must not call Deliver.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "core/request/inference_request.h"

namespace nereid {

class OrderedDelivery {
 public:
  using Result = StatusOr<std::unique_ptr<InferenceResponse>>;

  // Delivers response `seq` (calls `done` now or once every earlier response has been delivered).
  void Deliver(uint64_t seq, InferCallback& done, Result&& result);

 private:
  std::mutex mu_;
  uint64_t next_ = 0;                                            // guarded by mu_
  std::map<uint64_t, std::pair<InferCallback, Result>> parked_;  // guarded by mu_
};

}  // namespace nereid
