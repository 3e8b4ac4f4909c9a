#include "core/cache/cache_key.h"

#include <gtest/gtest.h>

namespace nereid {
namespace {

InferenceRequest Request(const std::string& bytes, Shape shape, DataType type,
                         std::vector<std::string> outputs = {}) {
  static std::vector<std::shared_ptr<std::string>> keep;
  keep.push_back(std::make_shared<std::string>(bytes));
  InferenceRequest r;
  InferInput in;
  in.name = "IN";
  in.data_type = type;
  in.shape = std::move(shape);
  in.data = std::span<const char>(keep.back()->data(), keep.back()->size());
  r.inputs.push_back(in);
  for (auto& o : outputs) r.outputs.push_back({o, {}, std::nullopt});
  return r;
}

TEST(CacheKeyTest, IdenticalRequestsShareAKey) {
  auto a = MakeCacheKey("m", 1, Request("abcd", {1, 4}, DataType::kUint8));
  auto b = MakeCacheKey("m", 1, Request("abcd", {1, 4}, DataType::kUint8));
  EXPECT_EQ(a.full, b.full);
  EXPECT_EQ(a.hash, b.hash);
}

TEST(CacheKeyTest, EveryPartOfTheRequestChangesTheKey) {
  const std::string base = MakeCacheKey("m", 1, Request("abcd", {1, 4}, DataType::kUint8)).full;
  EXPECT_NE(base, MakeCacheKey("n", 1, Request("abcd", {1, 4}, DataType::kUint8)).full);
  EXPECT_NE(base, MakeCacheKey("m", 2, Request("abcd", {1, 4}, DataType::kUint8)).full);
  EXPECT_NE(base, MakeCacheKey("m", 1, Request("abce", {1, 4}, DataType::kUint8)).full);
  EXPECT_NE(base, MakeCacheKey("m", 1, Request("abcd", {4, 1}, DataType::kUint8)).full);
  EXPECT_NE(base, MakeCacheKey("m", 1, Request("abcd", {1, 4}, DataType::kInt8)).full);
  EXPECT_NE(base, MakeCacheKey("m", 1, Request("abcd", {1, 4}, DataType::kUint8, {"OUT"})).full);
}

TEST(CacheKeyTest, InputOrderDoesNotMatter) {
  auto a = Request("ab", {2}, DataType::kUint8);
  auto b = a;
  InferInput second = a.inputs[0];
  second.name = "A";
  a.inputs.push_back(second);
  b.inputs.insert(b.inputs.begin(), second);
  EXPECT_EQ(MakeCacheKey("m", 1, a).full, MakeCacheKey("m", 1, b).full);
}

}  // namespace
}  // namespace nereid
