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
// for model loads, not for the request path.
uint64_t ResidentBytesTrimmed();

// Returns the allocator's free memory to the system (glibc malloc_trim) after a burst of queued
// requests drained. Walks the heap: call it rarely, and never under a lock.
void ReturnFreeMemory();

}  // namespace nereid
