#include "core/scheduler/ordered_delivery.h"

namespace nereid {

void OrderedDelivery::Deliver(uint64_t seq, InferCallback& done, Result&& result) {
  std::lock_guard<std::mutex> lock(mu_);
  if (seq != next_) {
    parked_.emplace(seq, std::make_pair(std::move(done), std::move(result)));
    return;
  }
  done(std::move(result));
  ++next_;
  for (auto it = parked_.begin(); it != parked_.end() && it->first == next_;
       it = parked_.erase(it)) {
    it->second.first(std::move(it->second.second));
    ++next_;
  }
}

}  // namespace nereid
