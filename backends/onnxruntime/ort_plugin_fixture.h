// Test fixture shared by the onnxruntime plugin tests: the plugin loaded once per process with
// dlopen, a fresh Backend per test, and helpers to load the models testdata/make_models.py writes
// into NEREID_ORT_TEST_MODELS. Not thread-safe.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "common/testing/plugin_harness.h"
#include "nereid/backend_api.h"

namespace nereid::backends::ort {

class OrtPluginTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (plugin_ == nullptr) plugin_ = new testing::Plugin(NEREID_ORT_PLUGIN);
  }

  void SetUp() override {
    ASSERT_TRUE(plugin_->ok()) << plugin_->error();
    std::string error;
    backend_ = plugin_->Create(backend::BackendOptions{}, &error);
    ASSERT_NE(backend_, nullptr) << error;
  }

  static std::string ModelPath(const std::string& file) {
    return std::string(NEREID_ORT_TEST_MODELS) + "/" + file;
  }

  StatusOr<std::unique_ptr<backend::Model>> Load(const std::string& name, const std::string& file,
                                                 const std::string& config) {
    backend::ModelLoadOptions options;
    options.model_name = name;
    options.version = 1;
    options.model_path = ModelPath(file);
    options.config_json = config;
    return backend_->LoadModel(options);
  }

  std::unique_ptr<backend::ModelInstance> Instance(backend::Model& model, int index = 0) {
    StatusOr<std::unique_ptr<backend::ModelInstance>> instance =
        model.CreateInstance({"instance_" + std::to_string(index), index, "KIND_CPU", {}});
    EXPECT_TRUE(instance.ok()) << instance.status().ToString();
    return instance.ok() ? std::move(instance).value() : nullptr;
  }

  // Never deleted: the plugin stays loaded for the whole process, as in the server.
  inline static testing::Plugin* plugin_ = nullptr;
  std::unique_ptr<backend::Backend> backend_;
};

}  // namespace nereid::backends::ort
