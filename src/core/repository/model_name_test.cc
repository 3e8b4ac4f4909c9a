#include "core/repository/model_name.h"

#include <gtest/gtest.h>

#include <string>

namespace nereid {
namespace {

TEST(ModelNameTest, AcceptsOrdinaryNames) {
  for (const char* name : {"simple", "resnet-50", "a.b", "model_v2", "Ünïcode", "x y"}) {
    EXPECT_TRUE(ValidateModelName(name).ok()) << name;
  }
}

TEST(ModelNameTest, RejectsEmptyTraversalAndControlCharacters) {
  const std::string nul("a\0b", 3);
  for (const std::string& name :
       {std::string(""), std::string("   "), std::string("\t"), std::string(".."), std::string("."),
        std::string("a/b"), std::string("../etc"), std::string("a\\b"), std::string("x..y"),
        std::string("a\nb"), std::string("\x7f"), nul}) {
    Status s = ValidateModelName(name);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << name;
    EXPECT_NE(s.message().find("invalid model name"), std::string::npos);
    EXPECT_EQ(s.message().find('\n'), std::string::npos);  // never echoes control characters
  }
}

}  // namespace
}  // namespace nereid
