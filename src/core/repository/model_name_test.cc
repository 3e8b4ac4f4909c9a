#include "core/repository/model_name.h"

#include <gtest/gtest.h>

#include <string>

namespace nereid {
namespace {

TEST(ModelNameTest, AcceptsOrdinaryNames) {
  for (const char* name : {"simple", "resnet-50", "a.b", "model_v2", "Ünïcode", "x y", "...",
                           "x..y", "..a", "a..", ".hidden", "...."}) {
    EXPECT_TRUE(ValidateModelName(name).ok()) << name;
  }
}

TEST(ModelNameTest, RejectsTraversalAndControlCharacters) {
  const std::string nul("a\0b", 3);
  for (const std::string& name :
       {std::string(".."), std::string("."), std::string("a/b"), std::string("../etc"),
        std::string("a\\b"), std::string("a\nb"), std::string("\x7f"), nul}) {
    Status s = ValidateModelName(name);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << name;
    EXPECT_NE(s.message().find("invalid model name"), std::string::npos);
    EXPECT_EQ(s.message().find('\n'), std::string::npos);  // never echoes control characters
  }
}

TEST(ModelNameTest, EmptyNameHasTritonsText) {
  for (const char* name : {"", " ", "   "}) {
    Status s = ValidateModelName(name);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(), "Model name cannot be empty. Please enter a valid name to deploy.");
  }
}

}  // namespace
}  // namespace nereid
