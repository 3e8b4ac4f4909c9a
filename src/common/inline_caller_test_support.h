// For tests only: an InlineCaller with a fixed answer that counts how often it was asked.
#pragma once

#include <atomic>

#include "common/inline_caller.h"

namespace nereid::test_support {

class FixedInlineCaller final : public InlineCaller {
 public:
  explicit FixedInlineCaller(bool waiting) : waiting_(waiting) {}
  bool OthersWaiting() const override {
    asked.fetch_add(1, std::memory_order_relaxed);
    return waiting_;
  }
  mutable std::atomic<int> asked{0};  // asked from the draining thread, read after it is joined

 private:
  const bool waiting_;
};

}  // namespace nereid::test_support
