#include "common/inline_caller.h"

namespace nereid {
namespace {

thread_local const InlineCaller* current = nullptr;

}  // namespace

ScopedInlineCaller::ScopedInlineCaller(const InlineCaller* caller) : previous_(current) {
  current = caller;
}

ScopedInlineCaller::~ScopedInlineCaller() { current = previous_; }

bool InlineCallerOthersWaiting() { return current != nullptr && current->OthersWaiting(); }

}  // namespace nereid
