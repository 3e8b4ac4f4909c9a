#include "common/error_text.h"

#include <gtest/gtest.h>

namespace nereid {
namespace {

TEST(ClientTextTest, ShortTextIsUnchanged) {
  EXPECT_EQ(ClientText(""), "");
  EXPECT_EQ(ClientText("INPUT0"), "INPUT0");
  const std::string limit(kMaxErrorTextLength, 'a');
  EXPECT_EQ(ClientText(limit), limit);
}

TEST(ClientTextTest, LongTextIsCutAndSaysItsLength) {
  const std::string long_name(100000, 'x');
  EXPECT_EQ(ClientText(long_name), std::string(kMaxErrorTextLength, 'x') + "... (100000 bytes)");
}

TEST(ClientTextTest, CutNeverSplitsAUtf8Character) {
  // 127 ASCII bytes, then a 2-byte character straddling the limit.
  std::string s(kMaxErrorTextLength - 1, 'a');
  s += "\xC3\xA9";  // é
  s += std::string(50, 'b');
  EXPECT_EQ(ClientText(s), std::string(kMaxErrorTextLength - 1, 'a') + "... (" +
                               std::to_string(s.size()) + " bytes)");
}

}  // namespace
}  // namespace nereid
