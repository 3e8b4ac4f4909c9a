// The dynamic batcher's decision, as a pure function of the queue, the policy and the time: which
// queued requests time out (rejected, or moved behind the others), which form the next batch, or
// until when to wait for a better one. Triton's semantics (REFERENCE.md §2.2, seed 003):
//   - priority levels are visited in increasing order (1 is the highest); within a level, the
//     requests that have not timed out in arrival order, then those delayed by a DELAY timeout;
//   - a batch grows in that order while it stays <= max_batch_size and the next request's
//     non-batch shapes (its `shape_key`) match the first one's; a request that is itself a batch
//     of N counts N;
//   - the largest preferred size reached is sent at once; failing that, the batch is sent when it
//     cannot grow (max_batch_size, a shape change, or >= the largest preferred size), when the
//     oldest request in it has waited max_queue_delay, or at once when that delay is 0; otherwise
//     the caller waits until the delay (or the first timeout in the queue) runs out.
//
// Thread-safety: pure; no state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace nereid {

struct QueuedItem {
  uint64_t level = 0;          // priority level; lower goes first (any increasing key)
  bool delayed = false;        // already moved behind the others by a DELAY timeout
  int64_t batch_size = 1;      // >= 1
  std::string_view shape_key;  // equal keys may share a batch
  uint64_t enqueue_ns = 0;
  uint64_t deadline_ns = 0;       // 0: no timeout
  bool delay_on_timeout = false;  // its level's timeout_action: DELAY (true) or REJECT
};

struct BatcherPolicy {
  int64_t max_batch_size = 1;
  std::vector<int64_t> preferred_batch_sizes;  // any order; empty means {max_batch_size}
  uint64_t max_queue_delay_ns = 0;
};

struct BatchDecision {
  std::vector<size_t> rejected;  // indices of timed-out REJECT requests, to fail now
  std::vector<size_t> delayed;   // indices of timed-out DELAY requests, to move behind
  std::vector<size_t> batch;     // indices of the batch to run now, in batch order
  int64_t batch_size = 0;        // sum of their batch sizes
  uint64_t wake_at_ns = 0;       // when nothing is sent: when to look again (0: on arrival)
};

// `items` holds every queued request, grouped by level in increasing order; within a level the
// not-delayed ones first in arrival order, then the delayed ones in the order they were delayed.
// With `flush` (shutting down) nothing waits: whatever can be formed is sent.
BatchDecision FormBatch(const std::vector<QueuedItem>& items, const BatcherPolicy& policy,
                        uint64_t now_ns, bool flush = false);

// Only the timeouts of FormBatch, for a queue no instance is free to take from: which requests
// time out by `now_ns` (rejected, or delayed), and when the next one will (wake_at_ns: one past
// the earliest deadline of the requests not delayed; 0 when none has one). `items` as for
// FormBatch; the returned batch is always empty.
BatchDecision ExpireTimeouts(const std::vector<QueuedItem>& items, uint64_t now_ns);

}  // namespace nereid
