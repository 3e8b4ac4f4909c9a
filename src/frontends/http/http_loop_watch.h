// Internal to nereid_http_server: whether another connection of an I/O loop has bytes waiting
// to be read, asked by a loop thread that runs jobs inline (common/inline_caller.h; the default
// scheduler's drain, ADR 0003's third addendum).
//
// The loop's own reactor registers its sockets edge-triggered and hands readiness straight to
// their handlers, so it cannot be asked. A LoopWatch keeps a second, level-triggered epoll set of
// the loop's connections: one epoll_ctl when a connection starts (the kernel drops a socket from
// the set when it is closed), and one epoll_wait with a zero timeout per question, whatever the
// number of connections (the kernel keeps the ready ones on a list).
//
// Thread-safety: Add() and OthersWaiting() from any thread (epoll is thread-safe); the watch must
// outlive its sockets' registration, i.e. the loop's connections.
#pragma once

#include "common/inline_caller.h"

namespace nereid {
namespace http_detail {

class LoopWatch final : public InlineCaller {
 public:
  LoopWatch();  // without an epoll descriptor (none left) it answers "nothing waits"
  ~LoopWatch() override;
  LoopWatch(const LoopWatch&) = delete;
  LoopWatch& operator=(const LoopWatch&) = delete;

  // Watches connected socket `fd` until it is closed. False when it could not be added (the
  // watch then misses it: a drain may run longer than it would, nothing else changes).
  bool Add(int fd) const;
  // True when a watched socket has bytes to read, a peer's close or an error pending.
  bool OthersWaiting() const override;

 private:
  int epoll_fd_;
};

}  // namespace http_detail
}  // namespace nereid
