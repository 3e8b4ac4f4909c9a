#include "python/exit_waiter.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace nereid::backends::python {

StatusOr<std::unique_ptr<ExitWaiter>> ExitWaiter::Create() {
  const int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) return Internal(std::string("eventfd: ") + std::strerror(errno));
  return std::unique_ptr<ExitWaiter>(new ExitWaiter(fd));
}

ExitWaiter::~ExitWaiter() { close(event_fd_); }

void ExitWaiter::Wake() {
  const uint64_t one = 1;
  (void)!write(event_fd_, &one, sizeof(one));
}

ExitWaiter::Event ExitWaiter::Wait(pid_t pid, int read_fd, int timeout_ms, int bell_fd,
                                   int idle_fd) {
  int pid_fd = -1;
  if (pid > 0) {
    pid_fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    if (pid_fd < 0 && errno == ESRCH) return Event::kExited;  // already reaped
  }
  // Negative fds are ignored by poll.
  pollfd fds[5] = {{event_fd_, POLLIN, 0},
                   {pid_fd, POLLIN, 0},
                   {read_fd, POLLIN, 0},
                   {bell_fd, POLLIN, 0},
                   {idle_fd, POLLIN, 0}};
  int ready = 0;
  while ((ready = poll(fds, 5, timeout_ms)) < 0 && errno == EINTR) {
  }
  if (ready == 0) return Event::kWoken;  // timed out
  const bool exited = pid_fd >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0;
  if (pid_fd >= 0) close(pid_fd);
  if (exited) return Event::kExited;
  if ((fds[0].revents & POLLIN) != 0) {
    uint64_t count = 0;
    (void)!read(event_fd_, &count, sizeof(count));
    return Event::kWoken;
  }
  return Event::kReadable;
}

}  // namespace nereid::backends::python
