#include "core/cache/local_cache.h"

#include <gtest/gtest.h>

#include <thread>

#include "core/cache/cache_factory.h"

namespace nereid {
namespace {

std::string Value(size_t n, char c) { return std::string(n, c); }

TEST(LocalCacheTest, HitAndMiss) {
  LocalCache cache(4096);
  EXPECT_FALSE(cache.Lookup(1).has_value());
  cache.Insert(1, "one", false);
  EXPECT_EQ(cache.Lookup(1), "one");
  const CacheStats s = cache.Stats();
  EXPECT_EQ(s.num_lookups, 2u);
  EXPECT_EQ(s.num_hits, 1u);
  EXPECT_EQ(s.num_misses, 1u);
  EXPECT_EQ(s.num_entries, 1u);
  EXPECT_GT(s.util, 0);
}

TEST(LocalCacheTest, EvictsLeastRecentlyUsedByBytes) {
  const uint64_t each = 100 + LocalCache::kEntryOverhead;
  LocalCache cache(3 * each);  // one shard: room for three entries of 100 bytes
  cache.Insert(1, Value(100, 'a'), false);
  cache.Insert(2, Value(100, 'b'), false);
  cache.Insert(3, Value(100, 'c'), false);
  ASSERT_TRUE(cache.Lookup(1).has_value());  // 1 is now the most recently used
  cache.Insert(4, Value(100, 'd'), false);   // evicts 2
  EXPECT_TRUE(cache.Lookup(1).has_value());
  EXPECT_FALSE(cache.Lookup(2).has_value());
  EXPECT_TRUE(cache.Lookup(3).has_value());
  EXPECT_TRUE(cache.Lookup(4).has_value());
  EXPECT_EQ(cache.Stats().num_evictions, 1u);
  EXPECT_EQ(cache.Stats().num_entries, 3u);
  cache.Insert(5, Value(250, 'e'), false);  // needs two slots' worth: evicts the two oldest
  EXPECT_TRUE(cache.Lookup(5).has_value());
  EXPECT_EQ(cache.Stats().num_entries, 2u);
}

TEST(LocalCacheTest, EntryLargerThanTheCacheIsSkipped) {
  LocalCache cache(200);
  cache.Insert(1, Value(50, 'a'), false);
  cache.Insert(2, Value(1000, 'b'), false);
  EXPECT_FALSE(cache.Lookup(2).has_value());
  EXPECT_TRUE(cache.Lookup(1).has_value());  // nothing was evicted for it
}

TEST(LocalCacheTest, ExistingEntryIsKeptUnlessReplaced) {
  LocalCache cache(4096);
  EXPECT_TRUE(cache.Insert(7, "first", false));
  EXPECT_FALSE(cache.Insert(7, "second", false));  // Triton's ALREADY_EXISTS
  EXPECT_EQ(cache.Lookup(7), "first");
  EXPECT_TRUE(cache.Insert(7, "third", true));
  EXPECT_EQ(cache.Lookup(7), "third");
  EXPECT_EQ(cache.Stats().num_entries, 1u);
}

TEST(LocalCacheTest, ReplaceDoesNotLeakBytes) {
  LocalCache cache(4096);
  for (int i = 0; i < 100; ++i) cache.Insert(7, Value(100, static_cast<char>('a' + i % 26)), true);
  EXPECT_EQ(cache.Stats().num_entries, 1u);
  EXPECT_NEAR(cache.Stats().util, (100.0 + LocalCache::kEntryOverhead) / 4096, 1e-9);
}

TEST(LocalCacheTest, ConcurrentUseStaysConsistent) {
  LocalCache cache(64ull << 20);  // several shards
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&cache, t] {
      for (uint64_t i = 0; i < 2000; ++i) {
        const uint64_t key = (i * 2654435761u) % 512;
        if (auto v = cache.Lookup(key)) {
          ASSERT_EQ(*v, std::to_string(key));
        } else {
          cache.Insert(key, std::to_string(key), false);
        }
      }
      (void)t;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(cache.Stats().num_lookups, 16000u);
  EXPECT_LE(cache.Stats().num_entries, 512u);
}

TEST(LocalCacheFactoryTest, SizeMustBeAPositiveInteger) {
  for (const char* bad : {"", "0", "-5", "abc", "12abc", "99999999999999999999999"}) {
    auto c = MakeLocalCache({{"size", bad}});
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_EQ(c.status().message(),
              "Failed to initialize LocalCache: config didn't contain a valid 'size' field.");
  }
  EXPECT_FALSE(MakeLocalCache({}).ok());
  EXPECT_FALSE(MakeLocalCache({{"bytes", "100"}}).ok());
  auto ok = MakeLocalCache({{"size", "1048576"}});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ((*ok)->name(), "local");
}

}  // namespace
}  // namespace nereid
