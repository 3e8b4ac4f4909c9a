// Test-only: ensemble configurations written as text.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "core/config/model_config_io.h"
#include "model_config.pb.h"

namespace nereid::ensemble_testing {

inline inference::ModelConfig Parse(const std::string& text) {
  auto config = config::ParseModelConfigText(text, "test.pbtxt");
  EXPECT_TRUE(config.ok()) << config.status().ToString();
  return config.ok() ? *config : inference::ModelConfig();
}

inline std::string Step(const std::string& model, const std::string& maps) {
  return "{ model_name: \"" + model + "\" model_version: -1 " + maps + " }";
}
inline std::string In(const std::string& key, const std::string& value) {
  return "input_map { key: \"" + key + "\" value: \"" + value + "\" } ";
}
inline std::string Out(const std::string& key, const std::string& value) {
  return "output_map { key: \"" + key + "\" value: \"" + value + "\" } ";
}

}  // namespace nereid::ensemble_testing
