#include "core/stats/process_memory.h"

#include <malloc.h>
#include <unistd.h>

#include <cstdio>

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

void ReturnFreeMemory() { malloc_trim(0); }

uint64_t ResidentBytesTrimmed() {
  malloc_trim(0);
  return ResidentBytes();
}

}  // namespace nereid
