#include "frontends/http/trace_settings_codec.h"

#include <gtest/gtest.h>

namespace nereid {
namespace {

TEST(TraceSettingsCodecTest, DecodesTritonKeys) {
  auto u = DecodeTraceSettingsRequest(
      R"({"trace_level":["TIMESTAMPS","TENSORS"],"trace_rate":"5","trace_count":null,)"
      R"("log_frequency":"2","unknown":1})");
  ASSERT_TRUE(u.ok()) << u.status().message();
  EXPECT_EQ(**u->level, trace::kLevelTimestamps | trace::kLevelTensors);
  EXPECT_EQ(**u->rate, 5u);
  ASSERT_TRUE(u->count.has_value());
  EXPECT_FALSE(u->count->has_value());  // null clears
  EXPECT_EQ(**u->log_frequency, 2u);
  EXPECT_TRUE(DecodeTraceSettingsRequest("")->empty());
  EXPECT_TRUE(DecodeTraceSettingsRequest(R"({"trace_level":["LOUD"]})")->empty());
}

TEST(TraceSettingsCodecTest, TritonErrors) {
  auto error = [](const char* body) { return DecodeTraceSettingsRequest(body).status(); };
  EXPECT_EQ(error(R"({"trace_file":"x"})").message(),
            "trace file location can not be updated through network protocol");
  EXPECT_EQ(error(R"({"trace_file":null})").code(), StatusCode::kUnsupported);
  EXPECT_EQ(error(R"({"trace_rate":5})").message(), "attempt to access JSON non-string as string");
  EXPECT_EQ(error(R"({"trace_rate":5})").code(), StatusCode::kInternal);
  EXPECT_EQ(error(R"({"trace_level":"TIMESTAMPS"})").message(),
            "attempt to access JSON non-array as array");
  EXPECT_EQ(error(R"({"trace_level":[1]})").message(),
            "attempt to access JSON non-string as string");
  EXPECT_EQ(error(R"({"trace_level":["OFF","TENSORS"]})").message(),
            "Expect only one trace level 'OFF' is specified");
  EXPECT_EQ(error(R"({"trace_count":"-5"})").message(),
            "Unable to parse 'trace_count'. Expecting value >= -1, got:-5");
  EXPECT_EQ(error(R"({"log_frequency":"x"})").message(), "Unable to parse 'log_frequency', got: x");
  EXPECT_EQ(error("[1]").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(error("{").code(), StatusCode::kInvalidArgument);
}

TEST(TraceSettingsCodecTest, Encodes) {
  trace::TraceConfig c;
  c.file = "a\"b";
  EXPECT_EQ(EncodeTraceSettings(c),
            R"({"trace_level":["OFF"],"trace_rate":"1000","trace_count":"-1",)"
            R"("log_frequency":"0","trace_file":"a\"b","trace_mode":"triton"})");
}

}  // namespace
}  // namespace nereid
