// Buffers for large request bodies (Session::StartDirectBody): mapped from the kernel and, once
// their last owner lets go, kept for the next large body on any thread. Freed to malloc, a 16 MiB
// body stayed resident in the arena of the thread that happened to read it, one spare per I/O
// thread and per thread that freed outputs (measured: +48 MiB over 20 requests of 16 MiB after the
// first); pooled, at most `max_spare` buffers stay mapped when nothing uses them. Reuse also
// spares the page faults (and the kernel's zeroing) of fresh memory.
//
// Thread-safety: all members are safe from any thread. A buffer may outlive nothing but its pool
// (ForBodies' pool lives as long as the process).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "common/thread_annotations.h"

namespace nereid {

class LargeBufferPool {
 public:
  explicit LargeBufferPool(size_t max_spare) : max_spare_(max_spare) {}
  ~LargeBufferPool();
  LargeBufferPool(const LargeBufferPool&) = delete;
  LargeBufferPool& operator=(const LargeBufferPool&) = delete;

  // A buffer of at least `size` bytes (size > 0) whose contents are indeterminate (a reused one
  // holds an earlier body's bytes); it returns to the pool when its last owner lets go. The
  // smallest spare that fits is reused, else a new one is mapped. Throws std::bad_alloc when the
  // kernel refuses the mapping.
  std::shared_ptr<char> Acquire(size_t size);

  size_t spare_count() const;
  size_t spare_bytes() const;

  // The process's pool for request bodies: two spares (a request being answered while the next
  // one is read). Never destroyed.
  static LargeBufferPool& ForBodies();

 private:
  struct Block {
    char* data;
    size_t capacity;
  };
  void Release(Block block);

  const size_t max_spare_;
  mutable Mutex mu_;
  std::vector<Block> spare_ GUARDED_BY(mu_);
};

}  // namespace nereid
