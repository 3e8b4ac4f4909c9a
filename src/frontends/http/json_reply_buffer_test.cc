#include "frontends/http/json_reply_buffer.h"

#include <gtest/gtest.h>

#include <thread>

namespace nereid {
namespace {

TEST(JsonReplyBufferTest, AReleasedBufferIsReusedWithItsCapacityOnTheSameThread) {
  const char* storage = nullptr;
  {
    std::shared_ptr<JsonReplyBuffer> b = NewJsonReplyBuffer();
    b->text.assign(1000, 'x');
    storage = b->text.data();
  }
  ASSERT_GE(JsonReplyBuffer::SparesOnThisThread(), 1);
  std::shared_ptr<JsonReplyBuffer> again = NewJsonReplyBuffer();
  EXPECT_TRUE(again->text.empty());
  EXPECT_GE(again->text.capacity(), 1000u);
  EXPECT_EQ(again->text.data(), storage);
}

TEST(JsonReplyBufferTest, KeepsAtMostAFewSparesAndNoHugeOnes) {
  std::thread([] {
    {
      std::shared_ptr<JsonReplyBuffer> huge = NewJsonReplyBuffer();
      huge->text.assign(JsonReplyBuffer::kMaxKeptBytes + 1, 'x');
    }
    EXPECT_EQ(JsonReplyBuffer::SparesOnThisThread(), 0);
    {
      std::shared_ptr<JsonReplyBuffer> many[JsonReplyBuffer::kSparesPerThread + 2];
      for (auto& b : many) {
        b = NewJsonReplyBuffer();
        b->text.assign(100, 'y');
      }
    }
    EXPECT_EQ(JsonReplyBuffer::SparesOnThisThread(), JsonReplyBuffer::kSparesPerThread);
  }).join();
}

TEST(JsonReplyBufferTest, ABufferReleasedOnAnotherThreadGoesToThatThreadsSpares) {
  std::shared_ptr<JsonReplyBuffer> b = NewJsonReplyBuffer();
  b->text.assign(200, 'z');
  std::thread([b = std::move(b)]() mutable {
    const int before = JsonReplyBuffer::SparesOnThisThread();
    b.reset();
    EXPECT_EQ(JsonReplyBuffer::SparesOnThisThread(), before + 1);
  }).join();
}

}  // namespace
}  // namespace nereid
