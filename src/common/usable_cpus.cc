#include "common/usable_cpus.h"

#include <sched.h>

#include <thread>

namespace nereid {

int UsableCpus() {
  int cpus = 0;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cpus = CPU_COUNT(&set);
  if (cpus <= 0) cpus = static_cast<int>(std::thread::hardware_concurrency());
  return cpus;
}

}  // namespace nereid
