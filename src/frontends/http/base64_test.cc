#include "frontends/http/base64.h"

#include <gtest/gtest.h>

namespace nereid {
namespace {

TEST(Base64Test, DecodesCanonicalInput) {
  EXPECT_EQ(Base64Decode(""), std::string());
  EXPECT_EQ(Base64Decode("Zg=="), std::string("f"));
  EXPECT_EQ(Base64Decode("Zm8="), std::string("fo"));
  EXPECT_EQ(Base64Decode("Zm9v"), std::string("foo"));
  EXPECT_EQ(Base64Decode("Zm9vYmFy"), std::string("foobar"));
  EXPECT_EQ(Base64Decode("AP8A/w=="), std::string("\x00\xff\x00\xff", 4));
}

TEST(Base64Test, RejectsMalformedInput) {
  EXPECT_FALSE(Base64Decode("Zg="));       // length
  EXPECT_FALSE(Base64Decode("Zm9v!A=="));  // alphabet
  EXPECT_FALSE(Base64Decode("Zg==Zm9v"));  // padding in the middle
  EXPECT_FALSE(Base64Decode("=Zm9"));      // padding at the start
  EXPECT_FALSE(Base64Decode("Z==="));      // three padding characters
  EXPECT_FALSE(Base64Decode("Zm 9"));      // whitespace
}

}  // namespace
}  // namespace nereid
