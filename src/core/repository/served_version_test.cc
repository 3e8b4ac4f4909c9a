// The Reaper: the only thread that destroys served versions, before and after shutdown.
#include "core/repository/served_version.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace nereid {
namespace {

// Records the thread that destroys it, and its place in the order of destruction.
struct Tracked {
  std::thread::id* destroyed_on;
  std::vector<int>* order;
  std::mutex* mu;
  int index;
  ~Tracked() {
    std::lock_guard<std::mutex> lock(*mu);
    *destroyed_on = std::this_thread::get_id();
    order->push_back(index);
  }
};

TEST(ReaperTest, DestroysItemsInOrderOnItsOwnThread) {
  std::mutex mu;
  std::vector<int> order;
  std::thread::id on[2];
  {
    Reaper reaper;
    reaper.Adopt();
    EXPECT_EQ(reaper.live(), 1u);
    reaper.Dispose(std::shared_ptr<Tracked>(new Tracked{&on[0], &order, &mu, 0}),
                   std::shared_ptr<Tracked>(new Tracked{&on[1], &order, &mu, 1}));
    EXPECT_EQ(reaper.live(), 0u);
    reaper.Shutdown();
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(order, (std::vector<int>{0, 1}));
  }
  EXPECT_NE(on[0], std::this_thread::get_id());
  EXPECT_EQ(on[0], on[1]);
}

// An owner that lets go only after Shutdown was called (a request finishing late, on a thread of
// its own) still has its items destroyed on the reaper thread, and Shutdown waits for it.
TEST(ReaperTest, ShutdownWaitsForEveryAdoptedOwner) {
  std::mutex mu;
  std::vector<int> order;
  std::thread::id on;
  std::thread::id late_thread;
  std::atomic<bool> disposed{false};
  Reaper reaper;
  reaper.Adopt();
  std::thread late([&] {
    late_thread = std::this_thread::get_id();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto item = std::shared_ptr<Tracked>(new Tracked{&on, &order, &mu, 7});
    disposed = true;
    reaper.Dispose(std::move(item));
  });
  reaper.Shutdown();
  EXPECT_TRUE(disposed);
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(order, std::vector<int>{7});
  }
  late.join();
  EXPECT_NE(on, late_thread);
  EXPECT_NE(on, std::this_thread::get_id());
  reaper.Shutdown();  // a second call does nothing
}

// Footprint (issue 21): no thread until something is to be destroyed; Shutdown without one is
// immediate.
TEST(ReaperTest, StartsItsThreadWithTheFirstDisposal) {
  std::mutex mu;
  std::vector<int> order;
  std::thread::id on;
  Reaper idle;
  idle.Adopt();
  EXPECT_FALSE(idle.thread_started());
  Reaper reaper;
  reaper.Adopt();
  reaper.Dispose(std::shared_ptr<Tracked>(new Tracked{&on, &order, &mu, 3}));
  EXPECT_TRUE(reaper.thread_started());
  reaper.Shutdown();
  EXPECT_NE(on, std::this_thread::get_id());
  EXPECT_EQ(order, std::vector<int>{3});
  Reaper never_used;
  never_used.Shutdown();
  EXPECT_FALSE(never_used.thread_started());
  idle.Dispose(nullptr);  // the adopted owner lets go, so its destructor's Shutdown returns
}

}  // namespace
}  // namespace nereid
