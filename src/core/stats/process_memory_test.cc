// Built twice: plainly, and with -fsanitize=address (process_memory_asan_test), where the
// allocator is ASan's and malloc_trim must not be called. In the TSan build (one binary) the
// allocator is TSan's, likewise.
#include "core/stats/process_memory.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace nereid {
namespace {

// GCC defines __SANITIZE_ADDRESS__ (the tsan preset defines NEREID_TSAN, see CMakeLists.txt);
// clang answers __has_feature.
#if defined(__SANITIZE_ADDRESS__) || defined(NEREID_TSAN)
#define NEREID_TEST_SANITIZED_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define NEREID_TEST_SANITIZED_HEAP 1
#endif
#endif
#ifdef NEREID_TEST_SANITIZED_HEAP
constexpr bool kSanitizedHeap = true;
#else
constexpr bool kSanitizedHeap = false;
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

TEST(ProcessMemoryTest, TrimsOnlyWithGlibcAllocator) {
  EXPECT_EQ(TrimsAllocator(), !kSanitizedHeap);
}

}  // namespace
}  // namespace nereid
