// Waits until a process exits (a pidfd) or someone calls Wake() (an eventfd): the python
// backend's instance watcher uses it to notice a stub that dies while the instance is idle.
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

  // Blocks until process `pid` exits (also: has exited, or is not our child any more) or Wake()
  // is called (a Wake() before Wait() counts). pid <= 0 waits for Wake() only. Returns true when
  // the process is gone, false when woken.
  bool Wait(pid_t pid);
  void Wake();

 private:
  explicit ExitWaiter(int event_fd) : event_fd_(event_fd) {}
  const int event_fd_;
};

}  // namespace nereid::backends::python
