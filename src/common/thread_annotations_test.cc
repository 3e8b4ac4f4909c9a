#include "common/thread_annotations.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <thread>

namespace nereid {
namespace {

using std::chrono::milliseconds;

// A guarded counter used the way the project's classes use their locks; compiled with
// -Wthread-safety (preset clang-tsa), these bodies are also what the analysis accepts.
struct Counter {
  Mutex mu;
  std::condition_variable cv;
  int value GUARDED_BY(mu) = 0;

  void Add() EXCLUDES(mu) {
    {
      MutexLock lock(mu);
      ++value;
    }
    cv.notify_all();
  }
  int Get() EXCLUDES(mu) {
    MutexLock lock(mu);
    return GetLocked();
  }
  int GetLocked() REQUIRES(mu) { return value; }
};

// True if `mu` was free (it is free again on return).
bool IsFree(Mutex& mu) {
  if (!mu.TryLock()) return false;
  mu.Unlock();
  return true;
}

TEST(MutexTest, TryLockFailsWhileHeldAndSucceedsAfterUnlock) {
  Mutex mu;
  mu.Lock();
  bool free = true;
  std::thread([&] { free = IsFree(mu); }).join();
  EXPECT_FALSE(free);
  mu.Unlock();
  EXPECT_TRUE(IsFree(mu));
}

TEST(MutexLockTest, ReleasesAtScopeEnd) {
  Counter c;
  c.Add();
  c.Add();
  EXPECT_EQ(c.Get(), 2);
  EXPECT_TRUE(IsFree(c.mu));
}

TEST(UniqueLockTest, UnlockAndLockAgainInOneScope) {
  Counter c;
  UniqueLock lock(c.mu);
  c.value = 1;
  lock.Unlock();
  std::thread([&] { c.Add(); }).join();  // would deadlock if Unlock did not release
  lock.Lock();
  EXPECT_EQ(c.value, 2);
}

TEST(UniqueLockTest, DestroyedAfterUnlockDoesNotUnlockAgain) {
  Counter c;
  {
    UniqueLock lock(c.mu);
    lock.Unlock();
  }
  EXPECT_TRUE(IsFree(c.mu));
}

TEST(UniqueLockTest, WaitWithPredicateReleasesTheLockWhileWaiting) {
  Counter c;
  std::thread adder([&] {
    for (int i = 0; i < 3; ++i) c.Add();
  });
  {
    UniqueLock lock(c.mu);
    lock.Wait(c.cv, [&]() REQUIRES(c.mu) { return c.value == 3; });
    EXPECT_EQ(c.value, 3);
  }
  adder.join();
}

TEST(UniqueLockTest, WaitWithoutPredicateInALoop) {
  Counter c;
  std::thread adder([&] { c.Add(); });
  {
    UniqueLock lock(c.mu);
    while (c.value == 0) lock.Wait(c.cv);
    EXPECT_EQ(c.value, 1);
  }
  adder.join();
}

TEST(UniqueLockTest, WaitForTimesOutAndReportsTheReadyPredicate) {
  Counter c;
  UniqueLock lock(c.mu);
  EXPECT_FALSE(lock.WaitFor(c.cv, milliseconds(20), [&]() REQUIRES(c.mu) { return c.value > 0; }));
  c.value = 1;
  EXPECT_TRUE(lock.WaitFor(c.cv, milliseconds(20), [&]() REQUIRES(c.mu) { return c.value > 0; }));
}

TEST(UniqueLockTest, WaitUntilReturnsTimeoutAtTheDeadlineWithTheLockHeld) {
  Counter c;
  UniqueLock lock(c.mu);
  const auto deadline = std::chrono::steady_clock::now() + milliseconds(20);
  std::cv_status s = std::cv_status::no_timeout;
  while (s == std::cv_status::no_timeout) s = lock.WaitUntil(c.cv, deadline);  // spurious wakes
  EXPECT_GE(std::chrono::steady_clock::now(), deadline);
  c.value = 5;  // still held: the analysis and the runtime agree
  EXPECT_EQ(c.GetLocked(), 5);
}

}  // namespace
}  // namespace nereid
