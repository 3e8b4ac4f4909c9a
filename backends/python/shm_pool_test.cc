#include "python/shm_pool.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <string>
#include <vector>

namespace nereid::backends::python {
namespace {

constexpr uint64_t kA = ShmAllocator::kAlignment;

TEST(ShmAllocator, AllocatesAlignedBlocksBackToBack) {
  ShmAllocator a(1024);
  EXPECT_EQ(a.Allocate(10), 0u);
  EXPECT_EQ(a.Allocate(kA), kA);
  EXPECT_EQ(a.Allocate(0), 2 * kA);  // an empty tensor still takes one unit
  EXPECT_EQ(a.used(), 3 * kA);
  EXPECT_EQ(a.blocks(), 3u);
}

TEST(ShmAllocator, RefusesWhatDoesNotFit) {
  ShmAllocator a(4 * kA);
  EXPECT_FALSE(a.Allocate(4 * kA + 1).has_value());
  ASSERT_TRUE(a.Allocate(3 * kA).has_value());
  EXPECT_FALSE(a.Allocate(2 * kA).has_value());  // exhausted: one unit left
  EXPECT_TRUE(a.Allocate(kA).has_value());
  EXPECT_FALSE(a.Allocate(1).has_value());
}

TEST(ShmAllocator, FreedBlocksMergeSoALargeBlockFitsAgain) {
  ShmAllocator a(4 * kA);
  const uint64_t b0 = *a.Allocate(kA), b1 = *a.Allocate(kA), b2 = *a.Allocate(kA);
  ASSERT_TRUE(a.Allocate(kA).has_value());
  a.Free(b0);
  a.Free(b2);
  // Fragmented: two free units, not adjacent.
  EXPECT_FALSE(a.Allocate(2 * kA).has_value());
  a.Free(b1);  // merges with both neighbours
  EXPECT_EQ(a.Allocate(3 * kA), 0u);
  EXPECT_EQ(a.used(), 4 * kA);
}

TEST(ShmAllocator, FirstFitReusesTheLowestHole) {
  ShmAllocator a(8 * kA);
  const uint64_t b0 = *a.Allocate(2 * kA);
  (void)*a.Allocate(kA);
  a.Free(b0);
  EXPECT_EQ(a.Allocate(kA), 0u);
  EXPECT_EQ(a.Allocate(kA), kA);
  EXPECT_EQ(a.Allocate(kA), 3 * kA);
}

TEST(ShmAllocator, FreeIgnoresUnknownOffsets) {
  ShmAllocator a(2 * kA);
  ASSERT_EQ(a.Allocate(kA), 0u);
  a.Free(7);
  a.Free(kA);
  a.Free(0);
  a.Free(0);  // twice
  EXPECT_EQ(a.used(), 0u);
  EXPECT_EQ(a.Allocate(2 * kA), 0u);
}

TEST(ShmAllocator, FreeAllEmptiesTheRange) {
  ShmAllocator a(4 * kA);
  (void)a.Allocate(kA);
  (void)a.Allocate(2 * kA);
  a.FreeAll();
  EXPECT_EQ(a.used(), 0u);
  EXPECT_EQ(a.blocks(), 0u);
  EXPECT_EQ(a.Allocate(4 * kA), 0u);
}

TEST(ShmAllocator, GrowsInStepsThatCoverTheRequest) {
  ShmAllocator a(4 * kA);
  (void)a.Allocate(3 * kA);  // one free unit at the end
  // 5 units needed, 1 free at the end: 4 more, in steps of 3 units -> 6.
  EXPECT_EQ(a.CapacityFor(5 * kA, 3 * kA), 10 * kA);
  a.Grow(10 * kA);
  EXPECT_EQ(a.Allocate(5 * kA), 3 * kA);  // the old tail and the new bytes form one range
  a.Grow(2 * kA);                         // never shrinks
  EXPECT_EQ(a.capacity(), 10 * kA);
}

TEST(ShmAllocator, CapacityForIgnoresAFreeRangeNotAtTheEnd) {
  ShmAllocator a(4 * kA);
  const uint64_t b0 = *a.Allocate(2 * kA);
  (void)a.Allocate(2 * kA);
  a.Free(b0);
  EXPECT_EQ(a.CapacityFor(3 * kA, kA), 7 * kA);
}

TEST(ShmPool, PutGathersChunksIntoOneBlock) {
  StatusOr<std::unique_ptr<ShmPool>> pool = ShmPool::Create(1 << 20, 1 << 20);
  ASSERT_TRUE(pool.ok()) << pool.status().message();
  const std::string a = "hello ", b = "world";
  const std::vector<std::span<const char>> chunks{{a.data(), a.size()}, {}, {b.data(), b.size()}};
  StatusOr<ShmBlock> block = (*pool)->Put(chunks);
  ASSERT_TRUE(block.ok());
  EXPECT_EQ(block->size, 11u);
  EXPECT_EQ(std::string((*pool)->bytes().data() + block->offset, block->size), "hello world");
}

TEST(ShmPool, GrowsForATensorLargerThanItAndKeepsEarlierBlocks) {
  StatusOr<std::unique_ptr<ShmPool>> pool = ShmPool::Create(1 << 20, 1 << 20);
  ASSERT_TRUE(pool.ok());
  const std::string first(1000, 'x');
  const std::vector<std::span<const char>> small{{first.data(), first.size()}};
  StatusOr<ShmBlock> b0 = (*pool)->Put(small);
  ASSERT_TRUE(b0.ok());
  const std::string big((5 << 20) + 3, 'y');
  const std::vector<std::span<const char>> large{{big.data(), big.size()}};
  StatusOr<ShmBlock> b1 = (*pool)->Put(large);
  ASSERT_TRUE(b1.ok());
  // 5 MiB + 64 needed, 1 MiB - 1024 free at the end: 5 steps of 1 MiB.
  EXPECT_EQ((*pool)->size(), 6u << 20);
  EXPECT_EQ(std::string((*pool)->bytes().data() + b0->offset, b0->size), first);
  EXPECT_EQ(std::string((*pool)->bytes().data() + b1->offset, b1->size), big);
  // The other side of the memfd sees the same bytes.
  void* other = mmap(nullptr, (*pool)->size(), PROT_READ, MAP_SHARED, (*pool)->fd(), 0);
  ASSERT_NE(other, MAP_FAILED);
  EXPECT_EQ(std::string(static_cast<char*>(other) + b1->offset, b1->size), big);
  munmap(other, (*pool)->size());
}

// Bytes of memory the memfd holds.
uint64_t Resident(int fd) {
  struct stat st {};
  EXPECT_EQ(fstat(fd, &st), 0);
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

TEST(ShmPool, FreeAllGivesGrownMemoryBackAndKeepsTheSize) {
  StatusOr<std::unique_ptr<ShmPool>> pool = ShmPool::Create(1 << 20, 1 << 20);
  ASSERT_TRUE(pool.ok());
  const std::string big(8 << 20, 'q');
  const std::vector<std::span<const char>> large{{big.data(), big.size()}};
  ASSERT_TRUE((*pool)->Put(large).ok());
  EXPECT_GE(Resident((*pool)->fd()), 8u << 20);
  // The window that wrote the big block keeps it; the next one, small only, gives it back.
  const std::vector<std::span<const char>> small{{big.data(), 100}};
  for (int i = 0; i < 2 * ShmPool::kTrimWindow - 1; ++i) {
    (*pool)->FreeAll();
    ASSERT_TRUE((*pool)->Put(small).ok());
  }
  EXPECT_GE(Resident((*pool)->fd()), 8u << 20);
  (*pool)->FreeAll();
  EXPECT_LE(Resident((*pool)->fd()), 1u << 20);  // at most the initial size stays
  EXPECT_EQ((*pool)->size(), 8u << 20);          // 1 MiB + 7 steps
  EXPECT_EQ((*pool)->allocator().used(), 0u);
  // Reused afterwards: the same bytes come back.
  StatusOr<ShmBlock> again = (*pool)->Put(large);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(std::string((*pool)->bytes().data() + again->offset, again->size), big);
}

TEST(ShmPool, ASteadyLoadOfBigTensorsKeepsItsPages) {
  StatusOr<std::unique_ptr<ShmPool>> pool = ShmPool::Create(1 << 20, 1 << 20);
  ASSERT_TRUE(pool.ok());
  const std::string big(4 << 20, 'b');
  const std::vector<std::span<const char>> large{{big.data(), big.size()}};
  for (int i = 0; i < 3 * ShmPool::kTrimWindow; ++i) {
    ASSERT_TRUE((*pool)->Put(large).ok());
    (*pool)->FreeAll();
    ASSERT_GE(Resident((*pool)->fd()), 4u << 20) << i;
  }
}

TEST(ShmPool, RefusesToGrowPastItsLimitAndStaysUsable) {
  StatusOr<std::unique_ptr<ShmPool>> pool = ShmPool::Create(1 << 20, 1 << 20);
  ASSERT_TRUE(pool.ok());
  const char byte = 'z';
  // A span claiming more than kMaxSize: refused before any byte is read.
  const std::vector<std::span<const char>> huge{{&byte, ShmPool::kMaxSize + 1}};
  EXPECT_FALSE((*pool)->Put(huge).ok());
  EXPECT_EQ((*pool)->size(), 1u << 20);
  const std::vector<std::span<const char>> one{{&byte, 1}};
  EXPECT_TRUE((*pool)->Put(one).ok());
}

// Pins (backend API v8 BLS inputs read without a copy, ADR 0014).

StatusOr<ShmBlock> PutString(ShmPool& pool, const std::string& s) {
  const std::vector<std::span<const char>> chunks{{s.data(), s.size()}};
  return pool.Put(chunks);
}

TEST(ShmAllocator, FindsTheBlockHoldingARange) {
  ShmAllocator a(8 * kA);
  const uint64_t b0 = *a.Allocate(2 * kA);
  const uint64_t b1 = *a.Allocate(kA);
  EXPECT_EQ(a.BlockHolding(b0, 2 * kA), b0);
  EXPECT_EQ(a.BlockHolding(b0 + 10, kA), b0);
  EXPECT_EQ(a.BlockHolding(b1, 0), b1);
  EXPECT_FALSE(a.BlockHolding(b0 + kA, 2 * kA).has_value());  // runs past the block's end
  EXPECT_FALSE(a.BlockHolding(b1 + kA, 1).has_value());       // free space
  a.Free(b0);
  EXPECT_FALSE(a.BlockHolding(b0, 1).has_value());
  EXPECT_EQ(a.UsedBlocks(), std::vector<uint64_t>{b1});
}

TEST(ShmPool, APinnedBlockIsNotHandedOutAgainUntilItsPinIsGone) {
  StatusOr<std::unique_ptr<ShmPool>> pool = ShmPool::Create(1 << 20, 1 << 20);
  ASSERT_TRUE(pool.ok());
  StatusOr<ShmBlock> b = PutString(**pool, "pinned bytes");
  ASSERT_TRUE(b.ok());
  std::optional<PinnedBytes> pin = (*pool)->Pin(b->offset + 7, 5);
  ASSERT_TRUE(pin.has_value());
  EXPECT_EQ(std::string(pin->bytes.data(), pin->bytes.size()), "bytes");
  (*pool)->Free(b->offset);
  StatusOr<ShmBlock> other = PutString(**pool, "other tensor");
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->offset, b->offset);
  (*pool)->FreeAll();
  ASSERT_TRUE(PutString(**pool, "third").ok());
  EXPECT_EQ(std::string(pin->bytes.data(), pin->bytes.size()), "bytes");
  EXPECT_EQ((*pool)->allocator().BlockHolding(b->offset, 1), b->offset);
  pin.reset();  // the called request is released
  (*pool)->FreeAll();
  EXPECT_EQ((*pool)->allocator().used(), 0u);
  StatusOr<ShmBlock> again = PutString(**pool, "reused");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->offset, b->offset);
}

TEST(ShmPool, APinKeepsItsBytesWhenThePoolGrowsAndWhenItIsDestroyed) {
  StatusOr<std::unique_ptr<ShmPool>> pool = ShmPool::Create(1 << 20, 1 << 20);
  ASSERT_TRUE(pool.ok());
  const std::string first(1000, 'p');
  StatusOr<ShmBlock> b = PutString(**pool, first);
  ASSERT_TRUE(b.ok());
  std::optional<PinnedBytes> pin = (*pool)->Pin(b->offset, b->size);
  ASSERT_TRUE(pin.has_value());
  ASSERT_TRUE(PutString(**pool, std::string(5 << 20, 'g')).ok());  // grows: a new mapping
  EXPECT_EQ(std::string(pin->bytes.data(), pin->bytes.size()), first);
  pool->reset();  // the stub was restarted: its pool is gone
  EXPECT_EQ(std::string(pin->bytes.data(), pin->bytes.size()), first);
}

TEST(ShmPool, NoPinOutsideABlockInUse) {
  StatusOr<std::unique_ptr<ShmPool>> pool = ShmPool::Create(1 << 20, 1 << 20);
  ASSERT_TRUE(pool.ok());
  StatusOr<ShmBlock> b = PutString(**pool, "gone");
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE((*pool)->Pin(b->offset + kA, 1).has_value());
  (*pool)->FreeAll();
  EXPECT_FALSE((*pool)->Pin(b->offset, 4).has_value());
}

TEST(ShmPool, NoTrimWhileAPinIsAlive) {
  StatusOr<std::unique_ptr<ShmPool>> pool = ShmPool::Create(1 << 20, 1 << 20);
  ASSERT_TRUE(pool.ok());
  const std::string big(6 << 20, 'z');
  StatusOr<ShmBlock> b = PutString(**pool, big);
  ASSERT_TRUE(b.ok());
  std::optional<PinnedBytes> pin = (*pool)->Pin(b->offset, b->size);
  ASSERT_TRUE(pin.has_value());
  for (int i = 0; i < 2 * ShmPool::kTrimWindow; ++i) (*pool)->FreeAll();
  EXPECT_EQ(std::string(pin->bytes.data(), pin->bytes.size()), big);  // not punched out
}

}  // namespace
}  // namespace nereid::backends::python
