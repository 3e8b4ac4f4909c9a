#include "common/block_recycler.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace nereid {
namespace {

TEST(BlockRecyclerTest, ReusesAFreedBlockOfTheSameSizeOnTheSameThread) {
  void* a = BlockRecycler::Allocate(48);
  const int cached = BlockRecycler::CachedOnThisThread();
  BlockRecycler::Deallocate(a, 48);
  EXPECT_EQ(BlockRecycler::CachedOnThisThread(), cached + 1);
  void* other = BlockRecycler::Allocate(72);  // another size: not that block
  EXPECT_NE(other, a);
  EXPECT_EQ(BlockRecycler::Allocate(48), a);
  BlockRecycler::Deallocate(a, 48);
  BlockRecycler::Deallocate(other, 72);
}

TEST(BlockRecyclerTest, KeepsAtMostItsSlotsAndNoLargeBlocks) {
  std::thread([] {  // a fresh thread: an empty cache
    void* big = BlockRecycler::Allocate(BlockRecycler::kMaxBlockBytes + 1);
    BlockRecycler::Deallocate(big, BlockRecycler::kMaxBlockBytes + 1);
    EXPECT_EQ(BlockRecycler::CachedOnThisThread(), 0);
    std::vector<void*> blocks;
    for (int i = 0; i < BlockRecycler::kSlots + 3; ++i)
      blocks.push_back(BlockRecycler::Allocate(32));
    for (void* p : blocks) BlockRecycler::Deallocate(p, 32);
    EXPECT_EQ(BlockRecycler::CachedOnThisThread(), BlockRecycler::kSlots);
  })
      .join();
}

TEST(BlockRecyclerTest, AllocateSharedObjectsComeBackAcrossThreads) {
  auto s = std::allocate_shared<std::string>(RecyclingAllocator<std::string>(), "body");
  std::thread([s = std::move(s)]() mutable {
    EXPECT_EQ(*s, "body");
    s.reset();  // freed into this thread's cache, released when it ends
    EXPECT_EQ(BlockRecycler::CachedOnThisThread(), 1);
  }).join();
}

}  // namespace
}  // namespace nereid
