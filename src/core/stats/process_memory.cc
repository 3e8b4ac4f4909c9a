#include "core/stats/process_memory.h"

#include <malloc.h>
#include <unistd.h>

#include <cstdio>

// GCC defines __SANITIZE_ADDRESS__ (the tsan preset defines NEREID_TSAN, see CMakeLists.txt);
// clang answers __has_feature.
#if defined(__SANITIZE_ADDRESS__) || defined(NEREID_TSAN)
#define NEREID_SANITIZED_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer) || __has_feature(leak_sanitizer)
#define NEREID_SANITIZED_HEAP 1
#endif
#endif

namespace nereid {

uint64_t ResidentBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long long size = 0;
  unsigned long long resident = 0;
  const int n = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  if (n != 2) return 0;
  const long page = sysconf(_SC_PAGESIZE);
  return page > 0 ? resident * static_cast<uint64_t>(page) : 0;
}

bool TrimsAllocator() {
#ifdef NEREID_SANITIZED_HEAP
  return false;
#else
  return true;
#endif
}

void ReturnFreeMemory() {
  if (TrimsAllocator()) malloc_trim(0);
}

uint64_t ResidentBytesTrimmed() {
  if (TrimsAllocator()) malloc_trim(0);
  return ResidentBytes();
}

}  // namespace nereid
