#include "core/server/task_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>

#include "common/thread_name.h"

namespace nereid {
namespace {

TEST(TaskPoolTest, StartsNoThreadUntilATaskArrives) {
  TaskPool pool(4, "pool");
  EXPECT_EQ(pool.ThreadCount(), 0u);
}

TEST(TaskPoolTest, StartsAThreadPerBlockedTaskUpToTheLimit) {
  TaskPool pool(2, "pool");
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::atomic<int> started{0};
  std::atomic<int> finished{0};
  for (int i = 0; i < 3; ++i) {
    pool.Submit([&, gate] {
      ++started;
      gate.wait();
      ++finished;
    });
  }
  EXPECT_EQ(pool.ThreadCount(), 2u);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (started.load() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(started.load(), 2);  // the third waits for a free thread
  release.set_value();
  while (finished.load() < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(finished.load(), 3);
  EXPECT_EQ(pool.ThreadCount(), 2u);
}

TEST(TaskPoolTest, NamesItsThreads) {
  TaskPool pool(1, "load-api");
  std::promise<std::string> name;
  pool.Submit([&] { name.set_value(ThisThreadName()); });
  EXPECT_EQ(name.get_future().get(), "load-api");
}

TEST(TaskPoolTest, DestructorRunsWhatIsQueued) {
  std::atomic<int> ran{0};
  {
    TaskPool pool(1, "pool");
    for (int i = 0; i < 5; ++i) pool.Submit([&] { ++ran; });
  }
  EXPECT_EQ(ran.load(), 5);
}

}  // namespace
}  // namespace nereid
