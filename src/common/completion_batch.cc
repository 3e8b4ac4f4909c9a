#include "common/completion_batch.h"

#include <vector>

namespace nereid {
namespace {

thread_local int depth = 0;
thread_local std::vector<std::function<void()>> deferred;

}  // namespace

CompletionBatch::CompletionBatch() { ++depth; }

CompletionBatch::~CompletionBatch() {
  if (depth > 1) {
    --depth;
    return;
  }
  // Still "active" while flushing, so work deferred by a flush joins this round.
  for (size_t i = 0; i < deferred.size(); ++i) {
    std::function<void()> fn = std::move(deferred[i]);
    fn();
  }
  deferred.clear();
  depth = 0;
}

bool CompletionBatch::Active() { return depth > 0; }

bool CompletionBatch::Defer(std::function<void()> flush) {
  if (depth == 0) return false;
  deferred.push_back(std::move(flush));
  return true;
}

}  // namespace nereid
