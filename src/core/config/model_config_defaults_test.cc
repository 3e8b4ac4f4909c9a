#include "core/config/model_config_defaults.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/config/model_config_io.h"

namespace nereid::config {
namespace {

using inference::ModelInstanceGroup;
using ::testing::ElementsAre;

inference::ModelConfig Parse(const char* text) {
  auto config = ParseModelConfigText(text, "test.pbtxt");
  EXPECT_TRUE(config.ok()) << config.status().ToString();
  return config.ok() ? *config : inference::ModelConfig();
}

NormalizeOptions Options() {
  NormalizeOptions opts;
  opts.model_dir_name = "dirname";
  opts.default_model_filename = "model.onnx";
  opts.default_cpu_instance_count = 2;
  return opts;
}

TEST(NormalizeModelConfigTest, FillsDefaultsOfAnEmptyConfig) {
  inference::ModelConfig config;
  ASSERT_TRUE(NormalizeModelConfig(&config, Options()).ok());
  EXPECT_EQ(config.name(), "dirname");
  ASSERT_TRUE(config.version_policy().has_latest());
  EXPECT_EQ(config.version_policy().latest().num_versions(), 1u);
  EXPECT_EQ(config.default_model_filename(), "model.onnx");
  ASSERT_EQ(config.instance_group_size(), 1);
  EXPECT_EQ(config.instance_group(0).name(), "dirname");
  EXPECT_EQ(config.instance_group(0).kind(), ModelInstanceGroup::KIND_CPU);
  EXPECT_EQ(config.instance_group(0).count(), 2);
  EXPECT_TRUE(config.optimization().input_pinned_memory().enable());
  EXPECT_TRUE(config.optimization().output_pinned_memory().enable());
}

TEST(NormalizeModelConfigTest, KeepsGivenValues) {
  auto config = Parse(R"cfg(
    name: "given"
    default_model_filename: "custom.onnx"
    version_policy { all {} }
    optimization { input_pinned_memory { enable: false } }
    instance_group [ { name: "grp" kind: KIND_CPU count: 3 } ]
  )cfg");
  ASSERT_TRUE(NormalizeModelConfig(&config, Options()).ok());
  EXPECT_EQ(config.name(), "given");
  EXPECT_EQ(config.default_model_filename(), "custom.onnx");
  EXPECT_TRUE(config.version_policy().has_all());
  EXPECT_FALSE(config.optimization().input_pinned_memory().enable());
  EXPECT_TRUE(config.optimization().output_pinned_memory().enable());
  ASSERT_EQ(config.instance_group_size(), 1);
  EXPECT_EQ(config.instance_group(0).name(), "grp");
  EXPECT_EQ(config.instance_group(0).count(), 3);
}

TEST(NormalizeModelConfigTest, LatestWithZeroVersionsIsLeftForValidation) {
  auto config = Parse("version_policy { latest { num_versions: 0 } }");
  ASSERT_TRUE(NormalizeModelConfig(&config, Options()).ok());
  EXPECT_EQ(config.version_policy().latest().num_versions(), 0u);
}

TEST(NormalizeModelConfigTest, NamesKindsAndCountsOfGroups) {
  auto config = Parse(R"cfg(
    name: "m"
    instance_group [ { kind: KIND_AUTO }, { kind: KIND_CPU count: 4 }, { kind: KIND_MODEL } ]
  )cfg");
  ASSERT_TRUE(NormalizeModelConfig(&config, Options()).ok());
  ASSERT_EQ(config.instance_group_size(), 3);
  EXPECT_EQ(config.instance_group(0).name(), "m_0");
  EXPECT_EQ(config.instance_group(0).kind(), ModelInstanceGroup::KIND_CPU);
  EXPECT_EQ(config.instance_group(0).count(), 2);
  EXPECT_EQ(config.instance_group(1).name(), "m_1");
  EXPECT_EQ(config.instance_group(1).count(), 4);
  EXPECT_EQ(config.instance_group(2).name(), "m_2");
  EXPECT_EQ(config.instance_group(2).kind(), ModelInstanceGroup::KIND_MODEL);
  EXPECT_EQ(config.instance_group(2).count(), 1);
}

TEST(NormalizeModelConfigTest, NonPositiveBackendDefaultCountMeansOne) {
  inference::ModelConfig config;
  NormalizeOptions opts = Options();
  opts.default_cpu_instance_count = 0;
  ASSERT_TRUE(NormalizeModelConfig(&config, opts).ok());
  EXPECT_EQ(config.instance_group(0).count(), 1);
}

TEST(NormalizeModelConfigTest, GpuGroupWithoutGpusIsAnError) {
  auto config = Parse("name: \"m\" instance_group [ { name: \"g\" kind: KIND_GPU } ]");
  Status status = NormalizeModelConfig(&config, Options());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "instance group g of model m has kind KIND_GPU but no GPUs are available");
}

TEST(NormalizeModelConfigTest, AutoBecomesGpuWhenGpusAreAvailable) {
  auto config = Parse("name: \"m\" instance_group [ { kind: KIND_AUTO } ]");
  NormalizeOptions opts = Options();
  opts.gpus_available = true;
  ASSERT_TRUE(NormalizeModelConfig(&config, opts).ok());
  EXPECT_EQ(config.instance_group(0).kind(), ModelInstanceGroup::KIND_GPU);
  EXPECT_EQ(config.instance_group(0).count(), 1);
}

TEST(NormalizeModelConfigTest, NegativeCountIsAnError) {
  auto config = Parse("name: \"m\" instance_group [ { name: \"g\" kind: KIND_CPU count: -1 } ]");
  Status status = NormalizeModelConfig(&config, Options());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), ::testing::HasSubstr("instance group g of model m"));
  EXPECT_THAT(status.message(), ::testing::HasSubstr("'count' -1"));
}

TEST(NormalizeModelConfigTest, PreferredBatchSizeDefaultsToMaxBatchSize) {
  auto config = Parse("max_batch_size: 16 dynamic_batching {}");
  ASSERT_TRUE(NormalizeModelConfig(&config, Options()).ok());
  EXPECT_THAT(config.dynamic_batching().preferred_batch_size(), ElementsAre(16));
}

TEST(NormalizeModelConfigTest, NoPreferredBatchSizeWithoutBatching) {
  auto config = Parse("max_batch_size: 0 dynamic_batching {}");
  ASSERT_TRUE(NormalizeModelConfig(&config, Options()).ok());
  EXPECT_TRUE(config.dynamic_batching().preferred_batch_size().empty());
}

TEST(NormalizeModelConfigTest, SequenceBatchingDefaults) {
  auto config = Parse("max_batch_size: 4 sequence_batching { oldest {} }");
  ASSERT_TRUE(NormalizeModelConfig(&config, Options()).ok());
  EXPECT_EQ(config.sequence_batching().max_sequence_idle_microseconds(), 1000000u);
  EXPECT_THAT(config.sequence_batching().oldest().preferred_batch_size(), ElementsAre(4));
}

TEST(NormalizeModelConfigTest, SequenceIdleIsKeptWhenSet) {
  auto config = Parse("sequence_batching { max_sequence_idle_microseconds: 5 }");
  ASSERT_TRUE(NormalizeModelConfig(&config, Options()).ok());
  EXPECT_EQ(config.sequence_batching().max_sequence_idle_microseconds(), 5u);
}

TEST(NormalizeModelConfigTest, EnsembleGetsNoInstanceGroupOrOptimization) {
  auto config = Parse(R"cfg(
    platform: "ensemble"
    ensemble_scheduling { step [ { model_name: "a" } ] }
  )cfg");
  ASSERT_TRUE(NormalizeModelConfig(&config, Options()).ok());
  EXPECT_EQ(config.instance_group_size(), 0);
  EXPECT_FALSE(config.has_optimization());
  EXPECT_TRUE(config.version_policy().has_latest());
}

}  // namespace
}  // namespace nereid::config
