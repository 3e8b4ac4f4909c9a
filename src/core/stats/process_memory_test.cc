// Built twice: plainly, and with -fsanitize=address (process_memory_asan_test), where the
// allocator is ASan's and malloc_trim must not be called.
#include "core/stats/process_memory.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace nereid {
namespace {

// GCC defines __SANITIZE_ADDRESS__; clang answers __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define NEREID_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NEREID_TEST_ASAN 1
#endif
#endif
#ifdef NEREID_TEST_ASAN
constexpr bool kAsan = true;
#else
constexpr bool kAsan = false;
#endif

TEST(ProcessMemoryTest, ResidentBytesIsPlausible) {
  const uint64_t rss = ResidentBytes();
  EXPECT_GT(rss, 1u << 20);    // a running gtest binary holds more than 1 MiB
  EXPECT_LT(rss, 1ull << 40);  // and less than a TiB
}

TEST(ProcessMemoryTest, TrimmedReadingAfterFreeingMemory) {
  {
    std::vector<std::unique_ptr<char[]>> blocks;
    for (int i = 0; i < 2000; ++i) blocks.emplace_back(new char[1000 + i]());
  }
  EXPECT_GT(ResidentBytesTrimmed(), 1u << 20);
}

TEST(ProcessMemoryTest, TrimsOnlyWithGlibcAllocator) { EXPECT_EQ(TrimsAllocator(), !kAsan); }

}  // namespace
}  // namespace nereid
