// Per-thread caches of freed small blocks, for the few objects a request allocates and frees
// again, usually on the same thread: the core's per-request completion (inference_server.cc), the
// HTTP responder, cancel token and body holder (allocate_shared with RecyclingAllocator), and a
// connection's queue of requests owed a reply (whose one-element deque nodes would otherwise be
// allocated and freed once per request). A block freed on another thread goes to that thread's
// cache (or the heap when it is full); caches are freed when their thread ends. Like Asio's own
// handler memory.
#pragma once

#include <cstddef>
#include <new>

namespace nereid {

class BlockRecycler {
 public:
  static constexpr size_t kMaxBlockBytes = 512;  // larger blocks always come from the heap
  static constexpr int kSlots = 8;               // cached blocks per thread, any sizes

  static void* Allocate(size_t bytes);
  static void Deallocate(void* p, size_t bytes);
  static int CachedOnThisThread();  // for tests
};

template <typename T>
class RecyclingAllocator {
  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);

 public:
  using value_type = T;
  RecyclingAllocator() = default;
  template <typename U>
  RecyclingAllocator(const RecyclingAllocator<U>&) {}

  T* allocate(size_t n) { return static_cast<T*>(BlockRecycler::Allocate(n * sizeof(T))); }
  void deallocate(T* p, size_t n) { BlockRecycler::Deallocate(p, n * sizeof(T)); }

  template <typename U>
  bool operator==(const RecyclingAllocator<U>&) const {
    return true;
  }
  template <typename U>
  bool operator!=(const RecyclingAllocator<U>&) const {
    return false;
  }
};

}  // namespace nereid
