// The process's resident memory, read from /proc/self/statm. Used to estimate what loading a
// model version costs (memory_usage in the statistics extension).
//
// Thread-safety: safe from any thread.
#pragma once

#include <cstdint>

namespace nereid {

// Resident set size in bytes; 0 when /proc is unreadable.
uint64_t ResidentBytes();

// The same after returning the allocator's free memory to the system (glibc malloc_trim), so
// that two readings around a load differ by what the load kept, not by how glibc's dynamic
// mmap threshold happened to place (and keep) its transient buffers. Costs a walk of the heap:
// for model loads, not for the request path. In a sanitizer build the sanitizer owns the heap
// and glibc's malloc_trim is not called (it walks arenas the sanitizer does not use, and was
// seen to crash under ASan): the reading is then untrimmed.
uint64_t ResidentBytesTrimmed();

// Whether ResidentBytesTrimmed and ReturnFreeMemory trim (false in ASan, TSan, MSan and LSan
// builds).
bool TrimsAllocator();

// Returns the allocator's free memory to the system (glibc malloc_trim) after a burst of queued
// requests drained. Walks the heap: call it rarely, and never under a lock. No-op in a sanitizer
// build.
void ReturnFreeMemory();

}  // namespace nereid
