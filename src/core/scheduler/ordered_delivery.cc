#include "core/scheduler/ordered_delivery.h"

namespace nereid {

void OrderedDelivery::Deliver(uint64_t seq, InferCallback& done, Result&& result) {
  UniqueLock lock(mu_);
  // While another thread is delivering, it takes this one too when its turn comes: a second
  // deliverer could overtake the first between two callbacks and break the order.
  if (delivering_ || seq != next_) {
    parked_.emplace(seq, std::make_pair(std::move(done), std::move(result)));
    return;
  }
  delivering_ = true;
  ++next_;
  lock.Unlock();
  done(std::move(result));
  lock.Lock();
  for (;;) {
    auto it = parked_.begin();
    if (it == parked_.end() || it->first != next_) break;
    {
      // Destroyed before the lock is taken again: callbacks and responses release their
      // resources (replies, admission tickets) outside it too.
      std::pair<InferCallback, Result> ready = std::move(it->second);
      parked_.erase(it);
      ++next_;
      lock.Unlock();
      ready.first(std::move(ready.second));
    }
    lock.Lock();
  }
  delivering_ = false;
}

}  // namespace nereid
