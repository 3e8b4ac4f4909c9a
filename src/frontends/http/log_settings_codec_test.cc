#include "frontends/http/log_settings_codec.h"

#include <gtest/gtest.h>

namespace nereid {
namespace {

TEST(LogSettingsCodec, DecodesEveryKey) {
  auto u = DecodeLogSettingsRequest(
      R"({"log_info":false,"log_warning":true,"log_error":false,"log_verbose_level":3,)"
      R"("log_format":"ISO8601","unknown":1,"log_file":null})");
  ASSERT_TRUE(u.ok()) << u.status().message();
  EXPECT_EQ(u->info, false);
  EXPECT_EQ(u->warning, true);
  EXPECT_EQ(u->error, false);
  EXPECT_EQ(u->verbose_level, 3u);
  EXPECT_EQ(u->format, logging::Format::kIso8601);
}

TEST(LogSettingsCodec, EmptyBodyAndNullsChangeNothing) {
  auto u = DecodeLogSettingsRequest("  ");
  ASSERT_TRUE(u.ok());
  EXPECT_FALSE(u->info || u->warning || u->error || u->verbose_level || u->format);
  u = DecodeLogSettingsRequest(R"({"log_info":null,"log_verbose_level":null})");
  ASSERT_TRUE(u.ok());
  EXPECT_FALSE(u->info || u->verbose_level);
}

void ExpectError(std::string_view body, StatusCode code, std::string_view text) {
  auto u = DecodeLogSettingsRequest(body);
  ASSERT_FALSE(u.ok()) << body;
  EXPECT_EQ(u.status().code(), code) << body;
  EXPECT_EQ(u.status().message(), text) << body;
}

TEST(LogSettingsCodec, TritonsErrors) {
  ExpectError(R"({"log_file":"x.log"})", StatusCode::kUnsupported,
              "log file location can not be updated through network protocol");
  ExpectError(R"({"log_info":1})", StatusCode::kInternal,
              "attempt to access JSON non-boolean as boolean");
  ExpectError(R"({"log_error":"false"})", StatusCode::kInternal,
              "attempt to access JSON non-boolean as boolean");
  ExpectError(R"({"log_verbose_level":-1})", StatusCode::kInternal,
              "attempt to access JSON non-unsigned-integer as unsigned-integer");
  ExpectError(R"({"log_verbose_level":"1"})", StatusCode::kInternal,
              "attempt to access JSON non-unsigned-integer as unsigned-integer");
  ExpectError(R"({"log_verbose_level":1.5})", StatusCode::kInternal,
              "attempt to access JSON non-unsigned-integer as unsigned-integer");
  ExpectError(R"({"log_format":"json"})", StatusCode::kUnavailable,
              "invalid argument for --log_format, got: json");
  ExpectError(R"({"log_format":7})", StatusCode::kInternal,
              "attempt to access JSON non-string as string");
  ExpectError("[1]", StatusCode::kInvalidArgument, "the request body must be a JSON object");
  ExpectError("{", StatusCode::kInvalidArgument,
              "failed to parse the request JSON buffer: offset 1");
}

TEST(LogSettingsCodec, HugeVerboseLevelIsClamped) {
  auto u = DecodeLogSettingsRequest(R"({"log_verbose_level":18446744073709551615})");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->verbose_level, logging::kMaxVerboseLevel);
}

TEST(LogSettingsCodec, EncodesTritonsShape) {
  logging::Settings s;
  s.file = "a\"b";
  s.verbose_level = 2;
  s.format = logging::Format::kIso8601;
  EXPECT_EQ(EncodeLogSettings(s),
            R"({"log_file":"a\"b","log_info":true,"log_warning":true,"log_error":true,)"
            R"("log_verbose_level":2,"log_format":"ISO8601"})");
}

}  // namespace
}  // namespace nereid
