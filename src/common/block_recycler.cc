#include "common/block_recycler.h"

namespace nereid {
namespace {

struct Cache {
  void* blocks[BlockRecycler::kSlots];
  size_t sizes[BlockRecycler::kSlots];
  int count = 0;
  bool alive = true;  // false once the thread's exit destroyed it: the heap serves from then on
  ~Cache() {
    for (int i = 0; i < count; ++i) ::operator delete(blocks[i]);
    count = 0;
    alive = false;
  }
};
thread_local Cache cache;

}  // namespace

void* BlockRecycler::Allocate(size_t bytes) {
  Cache& c = cache;
  if (!c.alive) return ::operator new(bytes);
  for (int i = c.count - 1; i >= 0; --i) {
    if (c.sizes[i] != bytes) continue;
    void* p = c.blocks[i];
    --c.count;
    c.blocks[i] = c.blocks[c.count];
    c.sizes[i] = c.sizes[c.count];
    return p;
  }
  return ::operator new(bytes);
}

void BlockRecycler::Deallocate(void* p, size_t bytes) {
  Cache& c = cache;
  if (!c.alive || bytes > kMaxBlockBytes || c.count == kSlots) return ::operator delete(p);
  c.blocks[c.count] = p;
  c.sizes[c.count] = bytes;
  ++c.count;
}

int BlockRecycler::CachedOnThisThread() { return cache.count; }

}  // namespace nereid
