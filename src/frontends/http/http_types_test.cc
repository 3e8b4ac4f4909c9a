#include "frontends/http/http_types.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

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

TEST(HttpHeadersTest, ClearKeepsStorageAndHidesTheOldFields) {
  HttpHeaders h;
  h.AddCopy("Content-Type", "application/json");
  h.Add("Host", "a");
  h.Add("X-Old", "1");
  h.Clear();
  EXPECT_EQ(h.size(), 0u);
  EXPECT_EQ(h.begin(), h.end());
  EXPECT_EQ(h.Find("Host"), nullptr);
  h.AddCopy("Host", "b");
  h.Add("Accept", "*/*");
  EXPECT_EQ(h.size(), 2u);
  EXPECT_EQ(*h.Find("host"), "b");
  EXPECT_EQ(h.Find("X-Old"), nullptr);  // kept storage only, not a field
  EXPECT_EQ(h.Count("Content-Type"), 0u);
  h.Set("host", "c");  // replaces within the fields, appends after them
  EXPECT_EQ(h.size(), 2u);
  EXPECT_EQ(h.begin()->first, "Accept");
  EXPECT_EQ(*h.Find("Host"), "c");
  h.AddCopy("X-New", "2");  // reuses the third slot
  EXPECT_EQ(h.size(), 3u);
  EXPECT_EQ(*h.Find("X-New"), "2");
  EXPECT_EQ(h.Find("X-Old"), nullptr);
}

TEST(HttpBodyTest, BuffersInOrderAfterMovesAndClear) {
  HttpBody body;
  EXPECT_TRUE(body.empty());
  body.Append(std::string(40, 'a'));  // the inline first segment
  body.AppendView("view");
  body.Append("");  // kept, but never visited
  body.Append("short");
  HttpBody moved = std::move(body);
  std::vector<std::string> seen;
  moved.ForEachBuffer([&seen](std::string_view v) { seen.emplace_back(v); });
  EXPECT_EQ(seen, (std::vector<std::string>{std::string(40, 'a'), "view", "short"}));
  EXPECT_EQ(moved.size(), 49u);
  EXPECT_EQ(moved.Flatten(), std::string(40, 'a') + "viewshort");
  moved.Clear();
  EXPECT_TRUE(moved.empty());
  EXPECT_EQ(moved.Flatten(), "");
  moved.Append("again");
  EXPECT_EQ(moved.Flatten(), "again");
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
