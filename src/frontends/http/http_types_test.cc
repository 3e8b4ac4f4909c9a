#include "frontends/http/http_types.h"

#include <gtest/gtest.h>

namespace nereid {
namespace {

TEST(HttpHeadersTest, CountIgnoresCase) {
  HttpHeaders h;
  h.Add("Inference-Header-Content-Length", "10");
  h.Add("content-type", "application/json");
  h.Add("inference-header-content-length", "12");
  EXPECT_EQ(h.Count("Inference-Header-Content-Length"), 2u);
  EXPECT_EQ(h.Count("Content-Type"), 1u);
  EXPECT_EQ(h.Count("Accept"), 0u);
  EXPECT_EQ(*h.Find("INFERENCE-HEADER-CONTENT-LENGTH"), "10");
}

TEST(HttpBodyStreamTest, PiecesInOrderThenClosed) {
  HttpBodyStream stream;
  int wakes = 0;
  EXPECT_TRUE(stream.Push("a"));  // before the waker: kept, and the waker runs at once
  stream.SetWaker([&wakes] { ++wakes; });
  EXPECT_EQ(wakes, 1);
  EXPECT_TRUE(stream.Push("b"));
  EXPECT_TRUE(stream.Push(""));  // skipped
  EXPECT_EQ(wakes, 2);
  bool closed = true;
  EXPECT_EQ(stream.Take(&closed), (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(closed);
  stream.Close();
  EXPECT_EQ(wakes, 3);
  EXPECT_TRUE(stream.Push("late"));  // dropped after Close
  EXPECT_TRUE(stream.Take(&closed).empty());
  EXPECT_TRUE(closed);
}

TEST(HttpBodyStreamTest, AbandonedStreamRefusesPieces) {
  HttpBodyStream stream;
  int wakes = 0;
  stream.SetWaker([&wakes] { ++wakes; });
  stream.Abandon();
  EXPECT_TRUE(stream.abandoned());
  EXPECT_FALSE(stream.Push("x"));
  EXPECT_EQ(wakes, 0);
  bool closed = true;
  EXPECT_TRUE(stream.Take(&closed).empty());
}

}  // namespace
}  // namespace nereid
