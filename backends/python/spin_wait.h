// The doorbell between the server and a stub (ADR 0020): a side that waits for the other's next
// frame first polls the socket without sleeping for a short while, when the two may run on
// different CPUs, and only then blocks in recv. A peer that answers within the spin is seen
// without the sleep and the cross-CPU wake-up; on one CPU (both pinned to it) spinning would only
// delay the peer, so no spin happens there. It is off unless NEREID_PYTHON_SPIN_US asks for it:
// on a busy machine the spin measured worse (bench/README.md, "doorbell").
//
// Thread-safety: a SpinPolicy belongs to the one reader of its socket.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>

#include "nereid/status.h"

namespace nereid::backends::python {

// True when this thread may run on more than one CPU (sched_getaffinity): only then can a peer
// that inherited the affinity run beside it.
bool MayRunOnSeveralCpus();

// The environment variable that sets the spin, in whole microseconds (0 to 1000; unset: 0).
inline constexpr char kSpinVariable[] = "NEREID_PYTHON_SPIN_US";

// The spin of the waits for a stub: `value` (kSpinVariable's value, null when unset) in
// microseconds, zero when `several_cpus` is false. A value that is not a whole number from 0 to
// 1000 is INVALID_ARG.
StatusOr<std::chrono::nanoseconds> SpinBudget(const char* value, bool several_cpus);

// How long the next wait spins: `budget`, except after a wait that the spin did not end (the
// peer was busy longer, or asleep): then no spin for 1, 2, 4 ... up to 64 waits, so a model whose
// execute takes milliseconds costs at most one spin in 64 waits.
class SpinPolicy {
 public:
  // budget zero: never spins.
  explicit SpinPolicy(std::chrono::nanoseconds budget) : budget_(budget) {}

  // The spin of the next wait (zero: block at once).
  std::chrono::nanoseconds Next();
  // The wait's bytes came during the spin.
  void Hit() { backoff_ = 0; }
  // They did not.
  void Miss();

 private:
  static constexpr int kMaxBackoff = 64;

  std::chrono::nanoseconds budget_;
  int skip_ = 0;     // waits left without a spin
  int backoff_ = 0;  // the length of the last back-off (0: none)
};

// recv(MSG_DONTWAIT) on `fd` into `buf` until it returns bytes, end of file or an error other
// than EAGAIN/EINTR, or `budget` has passed. Returns what recv returned last: > 0 bytes, 0 end of
// file, -1 with errno set (EAGAIN: nothing came within the budget).
ssize_t SpinRecv(int fd, char* buf, size_t len, std::chrono::nanoseconds budget);

}  // namespace nereid::backends::python
