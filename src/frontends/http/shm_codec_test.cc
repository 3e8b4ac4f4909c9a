#include "frontends/http/shm_codec.h"

#include <gtest/gtest.h>

namespace nereid {
namespace {

TEST(ShmCodecTest, DecodesRegister) {
  auto r = DecodeShmRegisterRequest(R"({"key":"/k","offset":4096,"byte_size":64})");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->key, "/k");
  EXPECT_EQ(r->offset, 4096u);
  EXPECT_EQ(r->byte_size, 64u);
  auto big = DecodeShmRegisterRequest(R"({"key":"/k","byte_size":18446744073709551615})");
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->offset, 0u);
  EXPECT_EQ(big->byte_size, UINT64_MAX);
}

TEST(ShmCodecTest, RegisterErrorsAreTritons) {
  auto message = [](std::string_view body) {
    return DecodeShmRegisterRequest(body).status().message();
  };
  EXPECT_EQ(message(R"({"byte_size":4})"), "Shared memory register request has no 'key' field");
  EXPECT_EQ(message(R"({"key":"/k"})"), "Shared memory register request has no 'byte_size' field");
  EXPECT_EQ(message("[]"), "Shared memory register request has no 'key' field");
  EXPECT_EQ(message(""), "failed to parse the request JSON buffer: The document is empty. at 0");
  auto negative = DecodeShmRegisterRequest(R"({"key":"/k","byte_size":-1})");
  EXPECT_EQ(negative.status().code(), StatusCode::kInvalidArgument);  // ADR 0002 item 6
  EXPECT_EQ(negative.status().message(),
            "attempt to access JSON non-unsigned-integer as unsigned-integer");
  EXPECT_EQ(message(R"({"key":"/k","offset":"0","byte_size":1})"),
            "attempt to access JSON non-unsigned-integer as unsigned-integer");
  EXPECT_EQ(message(R"({"key":1,"byte_size":1})"), "attempt to access JSON non-string as string");
}

TEST(ShmCodecTest, EncodesStatus) {
  EXPECT_EQ(EncodeSystemShmStatus({}), "[]");
  EXPECT_EQ(EncodeSystemShmStatus({{"r", "/k\"", 4096, 8}}),
            R"([{"name":"r","key":"/k\"","offset":4096,"byte_size":8}])");
  EXPECT_EQ(EncodeCudaShmStatus({}), "[]");
}

}  // namespace
}  // namespace nereid
