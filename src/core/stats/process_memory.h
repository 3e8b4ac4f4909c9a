// The process's resident memory, read from /proc/self/statm. Used to estimate what loading a
// model version costs (memory_usage in the statistics extension).
//
// Thread-safety: safe from any thread.
#pragma once

#include <cstdint>

namespace nereid {

// Resident set size in bytes; 0 when /proc is unreadable.
uint64_t ResidentBytes();

}  // namespace nereid
