// Internal to nereid_http_server: the HTTP I/O threads, one event loop (Boost.Asio io_context)
// each, and the choice of loop for every new connection. A connection lives on one loop from
// accept to close, so its handlers never run on two threads and an I/O thread never wakes
// another: there is no scheduler shared between threads (bench/README.md, "ioctx").
//
// Each io_context is built with BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO: one thread runs it and
// touches its sockets and timers (the reactor takes no per-socket lock); other threads only post
// to it (the scheduler keeps its lock for that). So a socket must be created, used and
// destroyed on its loop's thread, or after that thread is joined.
//
// Thread-safety: Assign(), the counts and loop() from any thread; Start() and Stop() from one
// controlling thread.
#pragma once

// clang-format off
#include <utility>  // before Boost.Asio: its awaitable.hpp uses std::exchange without it
// clang-format on
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/thread_annotations.h"
#include "frontends/http/http_loop_watch.h"

namespace nereid {
namespace http_detail {

// What the acceptor knows of a loop when it places a new connection.
struct LoopLoad {
  size_t open = 0;    // connections on it
  bool busy = false;  // a handler is running on it now (e.g. a model run inline)
};

// The loop for a new connection: among the loops not busy (all of them when every one is), the
// one with the fewest open connections; among equals, the first at or after `*next` (round
// robin), and *next moves past the one chosen. `loads` is not empty.
size_t PickLoop(const std::vector<LoopLoad>& loads, size_t* next);

// A loop's counters, read by the acceptors of every loop.
struct LoopCounters {
  std::atomic<size_t> open{0};
  std::atomic<bool> busy{false};
  LoopWatch watch;  // the loop's connections, for a handler running jobs inline
};

// One connection's place on its loop: counted from Assign() until this is destroyed.
class LoopSeat {
 public:
  LoopSeat() = default;
  LoopSeat(std::shared_ptr<LoopCounters> counters, size_t index)
      : counters_(std::move(counters)), index_(index) {}
  LoopSeat(LoopSeat&&) = default;
  LoopSeat& operator=(LoopSeat&& other) noexcept {
    Leave();
    counters_ = std::move(other.counters_);
    index_ = other.index_;
    return *this;
  }
  ~LoopSeat() { Leave(); }
  size_t index() const { return index_; }
  // The loop's watch of its connections (null for a default-constructed seat).
  const LoopWatch* watch() const { return counters_ != nullptr ? &counters_->watch : nullptr; }
  // Around a handler's call on the loop's thread: new connections go elsewhere meanwhile.
  void SetBusy(bool busy) const {
    if (counters_ != nullptr) counters_->busy.store(busy, std::memory_order_relaxed);
  }

 private:
  void Leave() {
    if (counters_ != nullptr) counters_->open.fetch_sub(1, std::memory_order_relaxed);
    counters_.reset();
  }
  std::shared_ptr<LoopCounters> counters_;
  size_t index_ = 0;
};

class IoLoops {
 public:
  explicit IoLoops(int count);  // at least one loop
  ~IoLoops();                   // Stop() if still running
  IoLoops(const IoLoops&) = delete;
  IoLoops& operator=(const IoLoops&) = delete;

  size_t size() const { return loops_.size(); }
  boost::asio::io_context& loop(size_t index) { return loops_[index]->ioc; }
  // Picks the loop for a new connection (PickLoop) and counts the connection on it.
  LoopSeat Assign() EXCLUDES(mu_);
  size_t open(size_t index) const {
    return loops_[index]->counters->open.load(std::memory_order_relaxed);
  }
  bool busy(size_t index) const {
    return loops_[index]->counters->busy.load(std::memory_order_relaxed);
  }

  // One thread per loop, named `thread_name`; an exception escaping a handler is logged and the
  // loop keeps running.
  void Start(const std::string& thread_name);
  bool started() const { return started_; }
  // Stops every loop (handlers not yet run are dropped) and joins the threads.
  void Stop();
  bool stopped() const { return stopped_.load(std::memory_order_acquire); }

 private:
  struct Loop {
    Loop();
    boost::asio::io_context ioc;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work;
    std::shared_ptr<LoopCounters> counters = std::make_shared<LoopCounters>();
    std::thread thread;
  };
  static void Run(boost::asio::io_context& ioc);

  std::vector<std::unique_ptr<Loop>> loops_;
  Mutex mu_;
  size_t next_ GUARDED_BY(mu_) = 0;
  bool started_ = false;
  std::atomic<bool> stopped_{false};
};

}  // namespace http_detail
}  // namespace nereid
