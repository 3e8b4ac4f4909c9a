#include "core/ensemble/step_limiter.h"

#include "common/logging.h"

namespace nereid {

StepLimiter::StepLimiter(std::string ensemble, size_t steps, uint32_t limit,
                         std::chrono::nanoseconds give_up_after)
    : ensemble_(std::move(ensemble)), limit_(limit), give_up_after_(give_up_after) {
  MutexLock lock(mu_);
  inflight_.assign(steps, 0);
}

void StepLimiter::Acquire(size_t step, const std::function<bool()>& cancelled) {
  UniqueLock lock(mu_);
  if (limit_ != 0 && inflight_[step] >= limit_) {
    const auto give_up = std::chrono::steady_clock::now() + give_up_after_;
    while (inflight_[step] >= limit_) {
      if (cancelled && cancelled()) break;
      if (std::chrono::steady_clock::now() >= give_up) {
        LOG_ERROR(
            "[Internal Error] Ensemble '{}' unable to schedule step {} (inflight: {} >= limit: {}) "
            "for {} seconds. Proceeding to avoid deadlock.",
            ensemble_, step, inflight_[step], limit_,
            std::chrono::duration_cast<std::chrono::seconds>(give_up_after_).count());
        break;
      }
      lock.WaitFor(freed_, std::chrono::milliseconds(5),
                   [&]() REQUIRES(mu_) { return inflight_[step] < limit_; });
    }
  }
  ++inflight_[step];
}

void StepLimiter::Release(size_t step) {
  {
    MutexLock lock(mu_);
    if (inflight_[step] > 0) --inflight_[step];
  }
  if (limit_ != 0) freed_.notify_all();
}

size_t StepLimiter::Inflight(size_t step) const {
  MutexLock lock(mu_);
  return inflight_[step];
}

}  // namespace nereid
