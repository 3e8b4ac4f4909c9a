#include "python/block_claims.h"

#include <utility>

namespace nereid::backends::python {

void BlockClaims::Open(int64_t group) { open_.insert(group); }

void BlockClaims::Claim(uint64_t offset, int64_t group) {
  if (open_.count(group) == 0) {
    loose_.push_back(offset);
    return;
  }
  claims_[offset].insert(group);
}

void BlockClaims::ClaimByAll(uint64_t offset) {
  if (open_.empty()) {
    loose_.push_back(offset);
    return;
  }
  claims_[offset].insert(open_.begin(), open_.end());
}

void BlockClaims::Close(int64_t group) {
  if (open_.erase(group) == 0) return;
  for (auto it = claims_.begin(); it != claims_.end();) {
    it->second.erase(group);
    if (it->second.empty()) {
      loose_.push_back(it->first);
      it = claims_.erase(it);
    } else {
      ++it;
    }
  }
}

std::vector<uint64_t> BlockClaims::TakeLoose() { return std::exchange(loose_, {}); }

void BlockClaims::Clear() {
  open_.clear();
  claims_.clear();
  loose_.clear();
}

}  // namespace nereid::backends::python
