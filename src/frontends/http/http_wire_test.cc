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

TEST(HttpWireTest, BodyTooLargeTextsAreTritons) {
  EXPECT_EQ(BodyTooLargeText(nullptr, 1001, 1000),
            "Request JSON size of 1001 bytes exceeds the maximum allowed value of 1000 bytes. "
            "Use --http-max-input-size to increase the limit.");
  const std::string raw = "0", binary = "57";
  EXPECT_EQ(BodyTooLargeText(&raw, 2000, 1000),
            "Raw request size of 2000 bytes exceeds the maximum allowed value of 1000 bytes. "
            "Use --http-max-input-size to increase the limit.");
  EXPECT_EQ(BodyTooLargeText(&binary, std::nullopt, 1000),
            "Request size of more than 1000 bytes exceeds the maximum allowed value of 1000 "
            "bytes. Use --http-max-input-size to increase the limit.");
  EXPECT_EQ(TooManyChunksText(65536),
            "Chunked request body exceeds maximum of 65536 non-empty chunks. Send fewer or larger "
            "HTTP chunks.");
}

TEST(HttpWireTest, HeaderBlockEnd) {
  EXPECT_EQ(HeaderBlockEnd("GET / HTTP/1.1\r\nHost: x\r\n\r\nbody", true), 27u);
  EXPECT_EQ(HeaderBlockEnd("\r\n\r\nGET / HTTP/1.1\r\n\r\n", true), 22u);
  EXPECT_EQ(HeaderBlockEnd("GET / HTTP/1.1\r\nHost: x\r\n", true), std::nullopt);
  // Once the parser has consumed some lines, a leading CRLF is the blank line ending the header.
  EXPECT_EQ(HeaderBlockEnd("\r\nbody\r\n\r\n", false), 2u);
  EXPECT_EQ(HeaderBlockEnd("Content-Length: 1\r\n\r\nx", false), 21u);
}

TEST(HttpWireTest, FramingSafePrefixStopsBeforeTheFramingFields) {
  const std::string head = "POST / HTTP/1.1\r\nHost: x\r\ncontent-length: 5\r\nA: b\r\n";
  EXPECT_EQ(FramingSafePrefix(head, true), 26u);  // the request line and Host
  EXPECT_EQ(FramingSafePrefix("Transfer-Encoding: chunked\r\n", false), 0u);
  EXPECT_EQ(FramingSafePrefix("POST / HTTP/1.1\r\nHost: x\r\nContent-Le", true), 36u);
  // A request line is never taken for a field, whatever it holds.
  EXPECT_EQ(FramingSafePrefix("Content-Length: 1\r\n", true), 19u);
}

TEST(HttpWireTest, ChunkedWinsOverContentLength) {
  const std::string both =
      "POST /i HTTP/1.1\r\nHost: x\r\ncontent-length: 5\r\nTransfer-Encoding: gzip, "
      "Chunked\r\nContent-Length: 7\r\n\r\n";
  EXPECT_EQ(DropContentLengthWhenChunked(both, true),
            "POST /i HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n");
  // The rest of a header whose first lines the parser already consumed.
  EXPECT_EQ(DropContentLengthWhenChunked("Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
                                         false),
            "Transfer-Encoding: chunked\r\n\r\n");
  // Nothing to do without both fields, or when chunked is not the final coding (the parser
  // refuses that request itself).
  EXPECT_EQ(DropContentLengthWhenChunked("POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\n", true),
            std::nullopt);
  EXPECT_EQ(
      DropContentLengthWhenChunked("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", true),
      std::nullopt);
  EXPECT_EQ(
      DropContentLengthWhenChunked(
          "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\nContent-Length: 5\r\n\r\n", true),
      std::nullopt);
}

TEST(HttpWireTest, StreamedResponseIsChunked) {
  HttpResponse r = HttpResponse::Empty(200);
  r.stream = std::make_shared<HttpBodyStream>();
  std::string head;
  WriteResponseHead(r, false, 11, &head);
  EXPECT_NE(head.find("Transfer-Encoding: chunked\r\n"), std::string::npos) << head;
  EXPECT_EQ(head.find("Content-Length"), std::string::npos) << head;
  std::string body;
  AppendChunk("", &body);
  EXPECT_EQ(body, "");
  AppendChunk(std::string(26, 'x'), &body);
  EXPECT_EQ(body, "1a\r\n" + std::string(26, 'x') + "\r\n");
  EXPECT_EQ(kLastChunk, "0\r\n\r\n");
}

}  // namespace
}  // namespace nereid
