#include "python/lock_counters.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace nereid::backends::python {
namespace {

TEST(BusyScope, CountsItsScope) {
  std::atomic<int> busy{0};
  {
    const BusyScope one(busy);
    const BusyScope two(busy);
    EXPECT_EQ(busy.load(), 2);
  }
  EXPECT_EQ(busy.load(), 0);
}

TEST(CountedLock, CountsOnlyWhileWaitingForTheLock) {
  // The watcher yields to a waiter (it will read the stub); a holder that has released the lock
  // and is returning must not count any more (it reads nothing): the idle bell's lost frame.
  Mutex mu;
  std::atomic<int> waiters{0};
  std::atomic<bool> held{false};
  mu.Lock();
  std::thread waiter([&] {
    const CountedLock lock(mu, waiters);
    held = true;
    EXPECT_EQ(waiters.load(), 0);  // counted no more once it holds the lock
  });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (waiters.load() == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(waiters.load(), 1);
  EXPECT_FALSE(held.load());
  mu.Unlock();
  waiter.join();
  EXPECT_TRUE(held.load());
  EXPECT_EQ(waiters.load(), 0);
  const CountedLock again(mu, waiters);  // an uncontended lock counts nothing afterwards
  EXPECT_EQ(waiters.load(), 0);
}

}  // namespace
}  // namespace nereid::backends::python
