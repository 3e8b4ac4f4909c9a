// Test binaries only: counts every heap allocation of the process by replacing malloc, calloc,
// realloc and free, which forward to glibc's __libc_* entry points (so operator new, gRPC, Boost,
// protobuf and the backends are all seen). Include it in exactly one .cc of a test binary: it
// defines those functions. Under a sanitizer, which replaces malloc itself, nothing is replaced
// and kCountingAllocations is false (the test skips).
//
// Thread-safety: the counters are atomics; the hook is read on every allocation of every thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

// The tsan preset undefines __SANITIZE_THREAD__ (CMakeLists.txt) and defines NEREID_TSAN instead.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(NEREID_TSAN)
#define NEREID_COUNT_ALLOCATIONS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define NEREID_COUNT_ALLOCATIONS 0
#endif
#endif
#ifndef NEREID_COUNT_ALLOCATIONS
#define NEREID_COUNT_ALLOCATIONS 1
#endif

namespace nereid::counting_malloc {

inline constexpr bool kCountingAllocations = NEREID_COUNT_ALLOCATIONS;

struct AllocationCounters {
  std::atomic<uint64_t> allocs{0};  // malloc + calloc + realloc
  std::atomic<uint64_t> bytes{0};   // their requested sizes
  std::atomic<uint64_t> frees{0};   // free of a non-null pointer
  // Called after each allocation is counted, with its size (a test's tracer; it runs inside
  // malloc, so it must guard against its own allocations).
  std::atomic<void (*)(size_t)> on_allocation{nullptr};
};

inline AllocationCounters allocation_counters;

}  // namespace nereid::counting_malloc

#if NEREID_COUNT_ALLOCATIONS
extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void __libc_free(void*);
}

namespace nereid::counting_malloc::internal {
inline void CountAllocation(size_t size) {
  allocation_counters.allocs.fetch_add(1, std::memory_order_relaxed);
  allocation_counters.bytes.fetch_add(size, std::memory_order_relaxed);
  if (auto hook = allocation_counters.on_allocation.load(std::memory_order_relaxed)) hook(size);
}
}  // namespace nereid::counting_malloc::internal

extern "C" {
void* malloc(size_t size) {
  nereid::counting_malloc::internal::CountAllocation(size);
  return __libc_malloc(size);
}
void* calloc(size_t n, size_t size) {
  nereid::counting_malloc::internal::CountAllocation(n * size);
  return __libc_calloc(n, size);
}
void* realloc(void* p, size_t size) {
  nereid::counting_malloc::internal::CountAllocation(size);
  return __libc_realloc(p, size);
}
void free(void* p) {
  if (p != nullptr) {
    nereid::counting_malloc::allocation_counters.frees.fetch_add(1, std::memory_order_relaxed);
  }
  __libc_free(p);
}
}
#endif
