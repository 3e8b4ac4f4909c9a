// Waits until a process exits (a pidfd), a socket is readable or someone calls Wake() (an
// eventfd): the python backend's instance watcher uses it to notice a stub that dies while the
// instance is idle, a stub that sends (a decoupled model's sender threads, a thread waiting in a
// BLS stream's next()) while it is idle, the BLS streams' bell (stub_questions.h) and the stub's
// idle bell (a thread of model.py that asks while the instance is idle, StubProcess).
//
// Thread-safety: Wait from one thread at a time; Wake from any thread.
#pragma once

#include <sys/types.h>

#include <memory>

#include "nereid/status.h"

namespace nereid::backends::python {

class ExitWaiter {
 public:
  static StatusOr<std::unique_ptr<ExitWaiter>> Create();
  ~ExitWaiter();
  ExitWaiter(const ExitWaiter&) = delete;
  ExitWaiter& operator=(const ExitWaiter&) = delete;

  enum class Event { kExited, kWoken, kReadable };
  // Blocks until process `pid` exits (also: has exited, or is not our child any more), Wake()
  // is called (a Wake() before Wait() counts) or `read_fd`, `bell_fd` or `idle_fd` (each if
  // >= 0) has bytes to read (kReadable; Wait reads none of them). pid <= 0 waits for Wake() (and
  // the fds) only. An exit wins over the others. After `timeout_ms` (>= 0) without any of them,
  // returns kWoken.
  Event Wait(pid_t pid, int read_fd = -1, int timeout_ms = -1, int bell_fd = -1, int idle_fd = -1);
  void Wake();

 private:
  explicit ExitWaiter(int event_fd) : event_fd_(event_fd) {}
  const int event_fd_;
};

}  // namespace nereid::backends::python
