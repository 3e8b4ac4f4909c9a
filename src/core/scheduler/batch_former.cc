#include "core/scheduler/batch_former.h"

#include <algorithm>
#include <limits>

#include "common/saturating_time.h"

namespace nereid {
namespace {

// The candidates in batch order after timeouts: per level, the live requests, then the ones
// delayed before, then the ones this pass delays. Fills d->rejected and d->delayed.
std::vector<size_t> ApplyTimeouts(const std::vector<QueuedItem>& items, uint64_t now_ns,
                                  BatchDecision* d) {
  std::vector<size_t> order;
  order.reserve(items.size());
  std::vector<size_t> newly_delayed;
  size_t i = 0;
  while (i < items.size()) {
    const uint64_t level = items[i].level;
    newly_delayed.clear();
    size_t j = i;
    for (; j < items.size() && items[j].level == level && !items[j].delayed; ++j) {
      const QueuedItem& it = items[j];
      if (it.deadline_ns != 0 && now_ns > it.deadline_ns) {
        (it.delay_on_timeout ? d->delayed : d->rejected).push_back(j);
        if (it.delay_on_timeout) newly_delayed.push_back(j);
      } else {
        order.push_back(j);
      }
    }
    for (; j < items.size() && items[j].level == level; ++j) order.push_back(j);
    order.insert(order.end(), newly_delayed.begin(), newly_delayed.end());
    i = j;
  }
  return order;
}

// One past the earliest deadline still to come among the items in `order` that are not delayed
// (0: none); the ones this pass delayed have theirs behind them.
uint64_t NextDeadlineWake(const std::vector<QueuedItem>& items, const std::vector<size_t>& order,
                          uint64_t now_ns) {
  uint64_t wake = 0;
  for (size_t idx : order) {
    const QueuedItem& it = items[idx];
    if (it.delayed || it.deadline_ns == 0 || now_ns > it.deadline_ns) continue;
    const uint64_t at = SaturatingAdd(it.deadline_ns, 1);
    wake = wake == 0 ? at : std::min(wake, at);
  }
  return wake;
}

}  // namespace

BatchDecision ExpireTimeouts(const std::vector<QueuedItem>& items, uint64_t now_ns) {
  BatchDecision d;
  const std::vector<size_t> order = ApplyTimeouts(items, now_ns, &d);
  d.wake_at_ns = NextDeadlineWake(items, order, now_ns);
  return d;
}

BatchDecision FormBatch(const std::vector<QueuedItem>& items, const BatcherPolicy& policy,
                        uint64_t now_ns, bool flush) {
  BatchDecision d;
  const std::vector<size_t> order = ApplyTimeouts(items, now_ns, &d);

  const int64_t max_batch = std::max<int64_t>(1, policy.max_batch_size);
  int64_t max_preferred = 0;
  for (int64_t p : policy.preferred_batch_sizes) max_preferred = std::max(max_preferred, p);
  auto is_preferred = [&](int64_t size) {
    if (policy.preferred_batch_sizes.empty()) return size == max_batch;
    return std::find(policy.preferred_batch_sizes.begin(), policy.preferred_batch_sizes.end(),
                     size) != policy.preferred_batch_sizes.end();
  };
  if (max_preferred == 0) max_preferred = max_batch;

  int64_t pending = 0;
  size_t count = 0;
  int64_t best = 0;  // the batch size to send if the delay has not run out
  size_t best_count = 0;
  bool send_now = false;
  std::string_view key;
  uint64_t oldest = std::numeric_limits<uint64_t>::max();
  for (size_t k = 0; k < order.size(); ++k) {
    const QueuedItem& it = items[order[k]];
    const int64_t bs = std::max<int64_t>(1, it.batch_size);
    if (count == 0) {
      key = it.shape_key;
    } else {
      // Growing past every preferred size: remember what we have, keep looking (Triton keeps
      // scanning so that the delay of everything that fits is taken into account).
      if (pending + bs > max_preferred && best == 0) {
        best = pending;
        best_count = count;
      }
      if (pending + bs > max_batch || it.shape_key != key) {
        send_now = true;
        break;
      }
    }
    pending += bs;
    ++count;
    oldest = std::min(oldest, it.enqueue_ns);
    if (is_preferred(pending)) {
      best = pending;
      best_count = count;
    }
  }
  if (count == 0) return d;

  const uint64_t delay = policy.max_queue_delay_ns;
  const bool delay_exceeded = delay != 0 && now_ns >= oldest && now_ns - oldest >= delay;
  auto send = [&](size_t n, int64_t size) {
    d.batch.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n));
    d.batch_size = size;
    return d;
  };
  if (best != 0 && !delay_exceeded) return send(best_count, best);
  if (send_now || pending >= max_preferred || delay_exceeded || delay == 0 || flush) {
    return send(count, pending);
  }
  // Wait for more requests, at most until the oldest has waited `delay`, and wake for the first
  // timeout so that it is applied on time.
  d.wake_at_ns = SaturatingAdd(oldest, delay);
  const uint64_t deadline = NextDeadlineWake(items, order, now_ns);
  if (deadline != 0) d.wake_at_ns = std::min(d.wake_at_ns, deadline);
  return d;
}

}  // namespace nereid
