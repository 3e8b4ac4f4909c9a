#include "perf_http.h"

#include <gtest/gtest.h>

namespace nereid::perf {
namespace {

TEST(PerfHttp, CompleteResponse) {
  std::string r =
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\ncontent-length: 5\r\n\r\nhello";
  ResponseHead h = ParseResponseHead(r);
  EXPECT_EQ(h.state, ResponseHead::kComplete);
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(h.total, r.size());
  EXPECT_EQ(r.substr(h.head), "hello");
}

TEST(PerfHttp, PartialResponses) {
  EXPECT_EQ(ParseResponseHead("HTTP/1.1 200 OK\r\nContent-Le").state, ResponseHead::kNeedMore);
  ResponseHead h = ParseResponseHead("HTTP/1.1 400 Bad Request\r\nContent-Length: 10\r\n\r\nabc");
  EXPECT_EQ(h.state, ResponseHead::kNeedMore);
  EXPECT_EQ(h.status, 400);
  EXPECT_EQ(h.total, h.head + 10);
}

// Found by fuzz_perf_replies: head + Content-Length 2^64-1 wrapped to a small total, and the
// reply counted as complete.
TEST(PerfHttp, ContentLengthThatWouldWrapIsBad) {
  EXPECT_EQ(
      ParseResponseHead("HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551615\r\n\r\n}").state,
      ResponseHead::kBad);
  EXPECT_EQ(
      ParseResponseHead("HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551590\r\n\r\n").state,
      ResponseHead::kBad);
}

TEST(PerfHttp, NoLengthMeansNoBody) {
  ResponseHead h = ParseResponseHead("HTTP/1.1 204 No Content\r\n\r\n");
  EXPECT_EQ(h.state, ResponseHead::kComplete);
  EXPECT_EQ(h.status, 204);
}

TEST(PerfHttp, GarbageIsBad) {
  EXPECT_EQ(ParseResponseHead("SSH-2.0-OpenSSH\r\n\r\n").state, ResponseHead::kBad);
  EXPECT_EQ(ParseResponseHead("HTTP/1.1 2x0 OK\r\n\r\n").state, ResponseHead::kBad);
  // fuzz_perf_replies' finding: from_chars took "-20" as a status.
  EXPECT_EQ(ParseResponseHead("HTTP/1.1 -200 OK\r\n\r\n").state, ResponseHead::kBad);
  EXPECT_EQ(ParseResponseHead("HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n").state,
            ResponseHead::kBad);
  EXPECT_EQ(ParseResponseHead("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n").state,
            ResponseHead::kBad);
  EXPECT_EQ(ParseResponseHead(std::string(70000, 'x')).state, ResponseHead::kBad);
}

TEST(PerfHttp, ConnectRefusedIsAnError) {
  auto fd = Connect("127.0.0.1", 1);  // nothing listens on port 1
  EXPECT_FALSE(fd.ok());
}

}  // namespace
}  // namespace nereid::perf
