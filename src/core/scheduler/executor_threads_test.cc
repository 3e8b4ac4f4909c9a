#include "core/scheduler/executor_threads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>

namespace nereid {
namespace {

TEST(ExecutorThreadsTest, RunsOneLoopPerIndexAndJoins) {
  std::mutex mu;
  std::set<size_t> seen;
  std::atomic<int> inside{0};
  std::atomic<bool> started{false};
  ExecutorThreads threads;
  threads.Start(3, [&](size_t i) {
    while (!started.load()) std::this_thread::yield();  // Start() has stored every thread
    if (threads.Contains(std::this_thread::get_id())) inside.fetch_add(1);
    std::lock_guard<std::mutex> lock(mu);
    seen.insert(i);
  });
  EXPECT_FALSE(threads.empty());
  EXPECT_FALSE(threads.Contains(std::this_thread::get_id()));
  started.store(true);
  threads.Join();
  EXPECT_TRUE(threads.empty());
  EXPECT_EQ(seen, (std::set<size_t>{0, 1, 2}));
  EXPECT_EQ(inside.load(), 3);
  threads.Join();  // idempotent
  EXPECT_TRUE(threads.empty());
}

TEST(ExecutorThreadsTest, ZeroThreadsIsEmpty) {
  ExecutorThreads threads;
  threads.Start(0, [](size_t) {});
  EXPECT_TRUE(threads.empty());
  threads.Join();
}

}  // namespace
}  // namespace nereid
