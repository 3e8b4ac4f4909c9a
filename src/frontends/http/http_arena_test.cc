#include "frontends/http/http_arena.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace nereid {
namespace {

TEST(HeaderArenaTest, BumpsAlignedThenOverflowsToTheHeapAndResets) {
  HeaderArena arena(64);
  void* a = arena.Allocate(3, 1);
  void* b = arena.Allocate(8, 8);
  EXPECT_TRUE(arena.Owns(a));
  EXPECT_TRUE(arena.Owns(b));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 8, 0u);
  EXPECT_EQ(arena.used(), 16u);
  void* big = arena.Allocate(100, 8);  // does not fit: heap
  EXPECT_FALSE(arena.Owns(big));
  EXPECT_EQ(arena.overflows(), 1u);
  arena.Deallocate(big, 8);
  arena.Deallocate(a, 1);  // in the block: nothing to do
  arena.Reset();
  EXPECT_EQ(arena.used(), 0u);
  EXPECT_EQ(arena.Allocate(3, 1), a);  // the same bytes again
}

TEST(HeaderArenaTest, ServesAStandardContainer) {
  HeaderArena arena(4096);
  {
    std::vector<std::string, HeaderArenaAllocator<std::string>> v{
        HeaderArenaAllocator<std::string>(&arena)};
    for (int i = 0; i < 10; ++i) v.push_back(std::to_string(i));
    EXPECT_EQ(v[9], "9");
  }
  EXPECT_GT(arena.used(), 0u);
  EXPECT_EQ(arena.overflows(), 0u);
  EXPECT_TRUE(HeaderArenaAllocator<int>(&arena) == HeaderArenaAllocator<char>(&arena));
}

}  // namespace
}  // namespace nereid
