// The CPUs this process may run on: its affinity mask (taskset and cgroup cpusets count), or the
// machine's count when the mask cannot be read. Read at each call (the mask can change).
#pragma once

namespace nereid {

int UsableCpus();

}  // namespace nereid
