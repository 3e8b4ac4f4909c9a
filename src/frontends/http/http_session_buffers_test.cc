#include "frontends/http/http_session_buffers.h"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

namespace nereid {
namespace {

constexpr size_t kMiB = 1024 * 1024;

TEST(LargeBufferPoolTest, ReleasedBufferIsReusedByAnotherThread) {
  LargeBufferPool pool(2);
  char* first = nullptr;
  {
    std::shared_ptr<char> b = pool.Acquire(3 * kMiB);
    first = b.get();
    std::memset(b.get(), 7, 3 * kMiB);                                // the whole size is writable
    std::thread([b = std::move(b)]() mutable { b.reset(); }).join();  // freed on another thread
  }
  EXPECT_EQ(pool.spare_count(), 1u);
  std::shared_ptr<char> again = pool.Acquire(2 * kMiB);  // smaller: the spare fits
  EXPECT_EQ(again.get(), first);
  EXPECT_EQ(again.get()[3 * kMiB - 1], 7);  // not cleared: contents are indeterminate
  EXPECT_EQ(pool.spare_count(), 0u);
}

TEST(LargeBufferPoolTest, TooSmallSpareIsNotUsedAndTheSmallestFitIsTaken) {
  LargeBufferPool pool(3);
  std::vector<std::shared_ptr<char>> held = {pool.Acquire(kMiB), pool.Acquire(8 * kMiB),
                                             pool.Acquire(4 * kMiB)};
  char* four = held[2].get();
  held.clear();
  EXPECT_EQ(pool.spare_count(), 3u);
  std::shared_ptr<char> b = pool.Acquire(3 * kMiB);
  EXPECT_EQ(b.get(), four);
  std::shared_ptr<char> big = pool.Acquire(16 * kMiB);  // no spare fits: mapped afresh
  EXPECT_EQ(pool.spare_count(), 2u);
}

TEST(LargeBufferPoolTest, AtMostMaxSpareStayAndTheLargestAreKept) {
  LargeBufferPool pool(2);
  {
    std::vector<std::shared_ptr<char>> held;
    for (size_t mib : {1, 2, 16, 4}) held.push_back(pool.Acquire(mib * kMiB));
  }
  EXPECT_EQ(pool.spare_count(), 2u);
  EXPECT_EQ(pool.spare_bytes(), 20 * kMiB);  // 16 and 4: the small ones were unmapped
}

TEST(LargeBufferPoolTest, NoSpareWhenMaxSpareIsZero) {
  LargeBufferPool pool(0);
  pool.Acquire(kMiB).reset();
  EXPECT_EQ(pool.spare_count(), 0u);
}

TEST(LargeBufferPoolTest, ConcurrentAcquireAndReleaseKeepTheBound) {
  LargeBufferPool pool(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&pool, t] {
      for (int i = 0; i < 50; ++i) {
        std::shared_ptr<char> b = pool.Acquire((1 + (i + t) % 3) * kMiB);
        b.get()[0] = static_cast<char>(i);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(pool.spare_count(), 2u);
}

}  // namespace
}  // namespace nereid
