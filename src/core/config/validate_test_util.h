// Test-only helpers shared by the validation tests.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "core/config/model_config_defaults.h"
#include "core/config/model_config_io.h"
#include "core/config/model_config_validate.h"

namespace nereid::config::testing {

inline constexpr char kBase[] = R"cfg(
name: "m"
backend: "identity"
max_batch_size: 8
input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1, 16 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1, 16 ] } ]
)cfg";

// kBase plus `extra`, normalized as the loader would.
inline inference::ModelConfig Make(const std::string& extra = "") {
  auto config = ParseModelConfigText(std::string(kBase) + extra, "test.pbtxt");
  EXPECT_TRUE(config.ok()) << config.status().ToString();
  if (!config.ok()) return {};
  NormalizeOptions opts;
  opts.model_dir_name = "m";
  EXPECT_TRUE(NormalizeModelConfig(&*config, opts).ok());
  return *config;
}

inline Status Validate(const inference::ModelConfig& config) {
  ValidateOptions opts;
  opts.model_dir_name = "m";
  return ValidateModelConfig(config, opts);
}

// The config is rejected with InvalidArgument and a message containing each of `parts`.
inline void ExpectInvalid(const inference::ModelConfig& config,
                          std::initializer_list<const char*> parts) {
  Status status = Validate(config);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  for (const char* part : parts) EXPECT_THAT(status.message(), ::testing::HasSubstr(part));
}

}  // namespace nereid::config::testing
