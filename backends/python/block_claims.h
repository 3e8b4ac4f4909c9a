// Which blocks of a stub's shared-memory pool (shm_pool.h, ADR 0014) requests still sending may
// view. A decoupled model's requests outlive their execution (sender threads of model.py), so
// their blocks must survive the next execution: each execution is a group, open until its
// execute returned and every request of it sent FINAL; a block is freed once no open group claims
// it. Pure and unit-tested.
//
// Not thread-safe: the instance uses it under its mutex.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <vector>

namespace nereid::backends::python {

class BlockClaims {
 public:
  void Open(int64_t group);
  // Block `offset` belongs to `group` alone (its execute inputs); an unknown group: loose.
  void Claim(uint64_t offset, int64_t group);
  // Block `offset` may be viewed by any request still sending (a BLS answer to a sender thread):
  // every open group claims it; with none open, it is loose at once.
  void ClaimByAll(uint64_t offset);
  // `group` is done: blocks no other open group claims become loose.
  void Close(int64_t group);
  // The loose blocks (to free now), emptied.
  std::vector<uint64_t> TakeLoose();
  // Forgets everything (the stub and its pool are gone).
  void Clear();
  // No group open and no block claimed: the pool can be freed whole.
  bool empty() const { return open_.empty() && claims_.empty(); }

 private:
  std::set<int64_t> open_;
  std::map<uint64_t, std::set<int64_t>> claims_;  // block -> the open groups claiming it
  std::vector<uint64_t> loose_;
};

}  // namespace nereid::backends::python
