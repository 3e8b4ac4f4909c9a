#include "frontends/http/compression.h"

#include <gtest/gtest.h>

namespace nereid {
namespace {

std::string Pattern(size_t n) {
  std::string s(n, '\0');
  uint32_t x = 12345;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1103515245u + 12345u;  // deterministic, mildly compressible
    s[i] = static_cast<char>((x >> 16) % 16);
  }
  return s;
}

std::string CompressString(ContentCoding coding, std::string_view data) {
  HttpBody body;
  body.Append(std::string(data));
  auto c = Compress(coding, body);
  EXPECT_TRUE(c.ok());
  return c.ok() ? *c : "";
}

TEST(CompressionTest, RoundTripsGzipAndDeflate) {
  for (ContentCoding coding : {ContentCoding::kGzip, ContentCoding::kDeflate}) {
    const std::string a = Pattern(100000);
    const std::string b = "tail";
    HttpBody body;
    body.Append(a);
    body.AppendView(b);
    auto compressed = Compress(coding, body);
    ASSERT_TRUE(compressed.ok());
    EXPECT_LT(compressed->size(), a.size());
    auto restored = Decompress(coding, *compressed, 1 << 20);
    ASSERT_TRUE(restored.ok()) << restored.status().message();
    EXPECT_EQ(**restored, a + b);
  }
  // gzip and zlib framings are not interchangeable.
  EXPECT_FALSE(
      Decompress(ContentCoding::kDeflate, CompressString(ContentCoding::kGzip, "x"), 100).ok());
  // Empty bodies round trip too.
  auto empty = Decompress(ContentCoding::kGzip, CompressString(ContentCoding::kGzip, ""), 10);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE((*empty)->empty());
}

TEST(CompressionTest, DecompressedSizeIsLimited) {
  const std::string zeros(10 << 20, '\0');
  const std::string bomb = CompressString(ContentCoding::kGzip, zeros);
  EXPECT_LT(bomb.size(), 64u << 10);
  auto r = Decompress(ContentCoding::kGzip, bomb, 1 << 20);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("1048576"), std::string::npos);
  // Exactly at the limit is fine; one byte under is not.
  const std::string small = CompressString(ContentCoding::kDeflate, Pattern(1000));
  EXPECT_TRUE(Decompress(ContentCoding::kDeflate, small, 1000).ok());
  EXPECT_FALSE(Decompress(ContentCoding::kDeflate, small, 999).ok());
}

TEST(CompressionTest, CorruptInputIsInvalidArgument) {
  const std::string good = CompressString(ContentCoding::kGzip, Pattern(5000));
  EXPECT_EQ(Decompress(ContentCoding::kGzip, "not gzip at all", 1 << 20).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_FALSE(Decompress(ContentCoding::kGzip, good.substr(0, good.size() / 2), 1 << 20).ok());
  EXPECT_FALSE(Decompress(ContentCoding::kGzip, "", 1 << 20).ok());
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 0x55;
  EXPECT_FALSE(Decompress(ContentCoding::kGzip, flipped, 1 << 20).ok());
  EXPECT_FALSE(Decompress(ContentCoding::kDeflate,
                          CompressString(ContentCoding::kDeflate, "x") + "junk", 1 << 20)
                   .ok());
  // Concatenated gzip members are one valid stream.
  auto two = Decompress(
      ContentCoding::kGzip,
      CompressString(ContentCoding::kGzip, "ab") + CompressString(ContentCoding::kGzip, "cd"), 100);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(**two, "abcd");
}

TEST(CompressionTest, ContentEncodingHeader) {
  EXPECT_EQ(*ParseContentEncoding(nullptr), ContentCoding::kIdentity);
  const std::string gzip = "gzip", deflate = " Deflate ", identity = "identity", empty = "";
  EXPECT_EQ(*ParseContentEncoding(&gzip), ContentCoding::kGzip);
  EXPECT_EQ(*ParseContentEncoding(&deflate), ContentCoding::kDeflate);
  EXPECT_EQ(*ParseContentEncoding(&identity), ContentCoding::kIdentity);
  EXPECT_EQ(*ParseContentEncoding(&empty), ContentCoding::kIdentity);
  const std::string br = "br";
  auto r = ParseContentEncoding(&br);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(r.status().message(), "Unsupported compression type");
}

ContentCoding Choose(const std::string& accept) { return ChooseResponseCoding(&accept); }

TEST(CompressionTest, AcceptEncodingChoice) {
  EXPECT_EQ(ChooseResponseCoding(nullptr), ContentCoding::kIdentity);
  EXPECT_EQ(Choose("gzip"), ContentCoding::kGzip);
  EXPECT_EQ(Choose("deflate"), ContentCoding::kDeflate);
  EXPECT_EQ(Choose("gzip, deflate"), ContentCoding::kGzip);  // first on a tie
  EXPECT_EQ(Choose("deflate, gzip"), ContentCoding::kDeflate);
  EXPECT_EQ(Choose("deflate;q=0.5, gzip;q=0.8"), ContentCoding::kGzip);
  EXPECT_EQ(Choose("gzip;q=0"), ContentCoding::kIdentity);
  EXPECT_EQ(Choose("gzip;q=0, deflate"), ContentCoding::kDeflate);
  EXPECT_EQ(Choose("br, *"), ContentCoding::kIdentity);
  EXPECT_EQ(Choose("identity, gzip"), ContentCoding::kIdentity);
  EXPECT_EQ(Choose("gzip;q=abc, deflate;q=0.1"), ContentCoding::kDeflate);
  EXPECT_EQ(Choose(""), ContentCoding::kIdentity);
}

TEST(CompressionTest, CompressResponseSetsContentEncoding) {
  HttpResponse r = HttpResponse::Json(200, Pattern(4096));
  r.body.AppendView("more");
  CompressResponse(ContentCoding::kGzip, &r);
  ASSERT_NE(r.headers.Find("Content-Encoding"), nullptr);
  EXPECT_EQ(*r.headers.Find("Content-Encoding"), "gzip");
  auto restored = Decompress(ContentCoding::kGzip, r.body.Flatten(), 1 << 20);
  ASSERT_TRUE(restored.ok());
  EXPECT_EQ(**restored, Pattern(4096) + "more");
  HttpResponse plain = HttpResponse::Json(200, "{}");
  CompressResponse(ContentCoding::kIdentity, &plain);
  EXPECT_EQ(plain.headers.Find("Content-Encoding"), nullptr);
  EXPECT_EQ(plain.body.Flatten(), "{}");
}

}  // namespace
}  // namespace nereid
