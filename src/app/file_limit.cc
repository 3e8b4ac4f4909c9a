#include "app/file_limit.h"

#include <sys/resource.h>

#include <algorithm>

namespace nereid {

uint64_t RaiseOpenFileLimit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
  const rlim_t wanted = std::min<rlim_t>(rl.rlim_max, rlim_t{1} << 20);
  if (rl.rlim_cur < wanted) {
    rlimit raised = rl;
    raised.rlim_cur = wanted;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  return rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : static_cast<uint64_t>(rl.rlim_cur);
}

uint64_t DefaultHttpMaxConnections(uint64_t open_file_limit) {
  if (open_file_limit == 0) return 1024;  // unknown: a conservative figure
  return std::clamp<uint64_t>(open_file_limit / 4 * 3, 16, 16384);
}

}  // namespace nereid
