#include "python/spin_wait.h"

#include <sched.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <string_view>

namespace nereid::backends::python {

bool MayRunOnSeveralCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return false;
  return CPU_COUNT(&set) > 1;
}

StatusOr<std::chrono::nanoseconds> SpinBudget(const char* value, bool several_cpus) {
  if (value == nullptr) return std::chrono::nanoseconds(0);
  const std::string_view text(value);
  int us = 0;
  bool valid = !text.empty() && text.size() <= 4;
  for (char c : text) {
    if (c < '0' || c > '9') valid = false;
    if (valid) us = 10 * us + (c - '0');
  }
  if (!valid || us > 1000) {
    return InvalidArgument(std::string(kSpinVariable) +
                           " must be a whole number of microseconds from 0 to 1000, got '" +
                           std::string(text.substr(0, 128)) + "'");
  }
  if (!several_cpus) return std::chrono::nanoseconds(0);
  return std::chrono::nanoseconds(std::chrono::microseconds(us));
}

std::chrono::nanoseconds SpinPolicy::Next() {
  if (skip_ > 0) {
    --skip_;
    return std::chrono::nanoseconds(0);
  }
  return budget_;
}

void SpinPolicy::Miss() {
  backoff_ = std::min(kMaxBackoff, backoff_ == 0 ? 1 : 2 * backoff_);
  skip_ = backoff_;
}

ssize_t SpinRecv(int fd, char* buf, size_t len, std::chrono::nanoseconds budget) {
  const auto until = std::chrono::steady_clock::now() + budget;
  while (true) {
    const ssize_t n = recv(fd, buf, len, MSG_DONTWAIT);
    if (n >= 0) return n;
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return n;
    if (std::chrono::steady_clock::now() >= until) {
      errno = EAGAIN;
      return -1;
    }
  }
}

}  // namespace nereid::backends::python
