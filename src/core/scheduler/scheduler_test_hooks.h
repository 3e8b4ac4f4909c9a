// Triton's scheduler test hooks, read from the environment when a model's scheduler is created
// (Triton reads them in its schedulers' Create and batcher threads):
//   TRITONSERVER_DELAY_SCHEDULER=N          the scheduler holds queued work until N requests are
//                                           queued, once; then it schedules as usual.
//   TRITONSERVER_BACKLOG_DELAY_SCHEDULER=N  the Direct sequence batcher also waits until N
//                                           requests are queued in the backlog (only together
//                                           with TRITONSERVER_DELAY_SCHEDULER, as in Triton).
// For tests only (docs/testing_hooks.md): they make "a batch of exactly N" deterministic.
//
// N is read as C's atoi reads it, as Triton does: leading blanks, an optional sign, digits, and
// the rest ignored ("abc" is 0, "5x" is 5). 0 means no hold. Triton stores the int in a size_t,
// so a negative N holds forever; ParseDelayCount keeps that and says so in *warning.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>

namespace nereid {

struct SchedulerTestHooks {
  size_t delay_count = 0;          // TRITONSERVER_DELAY_SCHEDULER
  size_t backlog_delay_count = 0;  // TRITONSERVER_BACKLOG_DELAY_SCHEDULER

  // Reads both variables; logs a warning for a value that is not a plain non-negative integer.
  static SchedulerTestHooks FromEnvironment();
};

// atoi's reading of `text` (nullptr: 0), converted to size_t as Triton does. Sets *warning (when
// given) to a description of any text that is not a plain non-negative decimal number.
size_t ParseDelayCount(const char* text, std::string* warning = nullptr);

}  // namespace nereid
