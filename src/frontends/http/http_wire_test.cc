#include "frontends/http/http_wire.h"

#include <gtest/gtest.h>

namespace nereid {
namespace {

TEST(HttpWireTest, ResponseHead) {
  HttpResponse r = HttpResponse::Json(404, R"({"error":"Not Found"})");
  r.headers.Add("Content-Length", "999");       // the server's own
  r.headers.Add("X-Evil", "a\r\nInjected: 1");  // would split the header block
  r.headers.Add("Inference-Header-Content-Length", "12");
  std::string head;
  WriteResponseHead(r, false, 11, &head);
  EXPECT_EQ(head,
            "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
            "Inference-Header-Content-Length: 12\r\nContent-Length: 21\r\n\r\n");
  WriteResponseHead(HttpResponse::Empty(200), true, 11, &head);
  EXPECT_EQ(head, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  WriteResponseHead(HttpResponse::Empty(503), false, 10, &head);
  EXPECT_EQ(
      head,
      "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n");
}

TEST(HttpWireTest, ReasonPhrases) {
  EXPECT_EQ(ReasonPhrase(405), "Method Not Allowed");
  EXPECT_EQ(ReasonPhrase(501), "Not Implemented");
  EXPECT_EQ(ReasonPhrase(299), "Unknown");
}

TEST(HttpWireTest, TritonAddressForms) {
  EXPECT_EQ(HostFromAddress("ipv6:[::1]"), "::1");
  EXPECT_EQ(HostFromAddress("[::]"), "::");
  EXPECT_EQ(HostFromAddress("0.0.0.0"), "0.0.0.0");
  EXPECT_EQ(HostFromAddress("localhost"), "localhost");
}

}  // namespace
}  // namespace nereid
