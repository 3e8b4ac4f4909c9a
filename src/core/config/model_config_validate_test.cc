#include "core/config/model_config_validate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/config/validate_test_util.h"

namespace nereid::config {
namespace {

using testing::ExpectInvalid;
using testing::Make;
using testing::Validate;

TEST(ValidateModelConfigTest, BaseConfigIsValid) { EXPECT_TRUE(Validate(Make()).ok()); }

TEST(ValidateModelConfigTest, NameMustMatchDirectory) {
  auto config = Make();
  config.set_name("other");
  ExpectInvalid(config, {"unexpected directory name 'm' for model 'other'"});
}

TEST(ValidateModelConfigTest, NameMayDifferForOverrides) {
  auto config = Make();
  config.set_name("other");
  ValidateOptions opts;
  opts.model_dir_name = "m";
  opts.name_may_differ = true;
  EXPECT_TRUE(ValidateModelConfig(config, opts).ok());
}

TEST(ValidateModelConfigTest, NameIsRequired) {
  auto config = Make();
  config.clear_name();
  ExpectInvalid(config, {"must specify 'name'"});
}

TEST(ValidateModelConfigTest, PlatformOrBackendIsRequired) {
  auto config = Make();
  config.clear_backend();
  ExpectInvalid(config, {"model 'm'", "'platform' or 'backend'"});
}

TEST(ValidateModelConfigTest, NegativeMaxBatchSize) {
  auto config = Make();
  config.set_max_batch_size(-1);
  ExpectInvalid(config, {"model 'm'", "'max_batch_size'", "-1"});
}

TEST(ValidateModelConfigTest, InputNameIsRequired) {
  auto config = Make();
  config.mutable_input(0)->clear_name();
  ExpectInvalid(config, {"model 'm': input 0: must specify 'name'"});
}

TEST(ValidateModelConfigTest, DuplicateInputName) {
  auto config = Make();
  *config.add_input() = config.input(0);
  ExpectInvalid(config, {"model 'm': input 'IN' is specified more than once"});
}

TEST(ValidateModelConfigTest, DuplicateOutputName) {
  auto config = Make();
  *config.add_output() = config.output(0);
  ExpectInvalid(config, {"model 'm': output 'OUT' is specified more than once"});
}

TEST(ValidateModelConfigTest, InputAndOutputMayShareAName) {
  auto config = Make();
  config.mutable_output(0)->set_name("IN");
  EXPECT_TRUE(Validate(config).ok());
}

TEST(ValidateModelConfigTest, DataTypeIsRequired) {
  auto config = Make();
  config.mutable_output(0)->set_data_type(inference::TYPE_INVALID);
  ExpectInvalid(config, {"output 'OUT'", "'data_type'"});
}

TEST(ValidateModelConfigTest, UnknownDataTypeNumber) {
  auto config = Make();
  config.mutable_input(0)->set_data_type(static_cast<inference::DataType>(99));
  ExpectInvalid(config, {"input 'IN'", "unknown 'data_type' 99"});
}

TEST(ValidateModelConfigTest, DimsAreRequired) {
  auto config = Make();
  config.mutable_input(0)->clear_dims();
  ExpectInvalid(config, {"input 'IN'", "must specify 'dims'"});
}

TEST(ValidateModelConfigTest, ZeroDimIsRejected) {
  auto config = Make();
  config.mutable_input(0)->set_dims(1, 0);
  ExpectInvalid(config, {"input 'IN'", "'dims' must be integers >= 1, or -1", "[-1,0]"});
}

TEST(ValidateModelConfigTest, DimBelowMinusOneIsRejected) {
  auto config = Make();
  config.mutable_output(0)->set_dims(0, -2);
  ExpectInvalid(config, {"output 'OUT'", "'dims'", "[-2,16]"});
}

TEST(ValidateModelConfigTest, ReshapeWithSameElementCountIsValid) {
  auto config = Make(
      "input [ { name: \"R\" data_type: TYPE_FP32 dims: [ 2, 4, -1, 6 ] "
      "reshape { shape: [ 8, -1, 1, 6 ] } } ]");
  EXPECT_TRUE(Validate(config).ok()) << Validate(config).ToString();
}

TEST(ValidateModelConfigTest, EmptyReshapeOfOneElementIsValidWhenBatching) {
  auto config = Make("input [ { name: \"R\" data_type: TYPE_FP32 dims: [ 1 ] reshape {} } ]");
  EXPECT_TRUE(Validate(config).ok());
}

TEST(ValidateModelConfigTest, EmptyReshapeWithoutBatchingIsRejected) {
  auto config = Make("input [ { name: \"R\" data_type: TYPE_FP32 dims: [ 1 ] reshape {} } ]");
  config.set_max_batch_size(0);
  ExpectInvalid(config, {"input 'R'", "empty 'reshape'", "max_batch_size is 0"});
}

TEST(ValidateModelConfigTest, ReshapeDimMustBePositiveOrWildcard) {
  auto config =
      Make("input [ { name: \"R\" data_type: TYPE_FP32 dims: [ 4 ] reshape { shape: [ 0 ] } } ]");
  ExpectInvalid(config, {"input 'R'", "'reshape.shape' must be integers >= 1, or -1"});
}

TEST(ValidateModelConfigTest, ReshapeElementCountMustMatch) {
  auto config = Make(
      "output [ { name: \"R\" data_type: TYPE_FP32 dims: [ 4, 4 ] reshape { shape: [ 8 ] } } ]");
  ExpectInvalid(config, {"output 'R'", "different element counts", "[4,4]", "[8]"});
}

TEST(ValidateModelConfigTest, ReshapeWildcardCountMustMatch) {
  auto config = Make(
      "input [ { name: \"R\" data_type: TYPE_FP32 dims: [ -1, 4 ] reshape { shape: [ 4 ] } } ]");
  ExpectInvalid(config, {"input 'R'", "different numbers of variable-size dimensions"});
}

TEST(ValidateModelConfigTest, ReshapeRunsBetweenWildcardsMustMatch) {
  auto config = Make(
      "input [ { name: \"R\" data_type: TYPE_FP32 dims: [ 2, -1, 3 ] "
      "reshape { shape: [ 3, -1, 2 ] } } ]");
  ExpectInvalid(config, {"input 'R'", "different element counts"});
}

TEST(ValidateModelConfigTest, ImageFormatNeedsThreeDims) {
  auto config = Make();
  config.mutable_input(0)->set_format(inference::ModelInput::FORMAT_NCHW);
  ExpectInvalid(config, {"input 'IN'", "'format' FORMAT_NCHW requires 3 dims"});
}

TEST(ValidateModelConfigTest, LabelFilenameMustStayInsideModelDirectory) {
  auto config = Make();
  config.mutable_output(0)->set_label_filename("../../etc/passwd");
  ExpectInvalid(config, {"output 'OUT'", "'label_filename'"});
}

TEST(ValidateModelConfigTest, LatestNeedsAtLeastOneVersion) {
  auto config = Make("version_policy { latest { num_versions: 0 } }");
  ExpectInvalid(config, {"model 'm'", "'version_policy.latest.num_versions' must be >= 1"});
}

TEST(ValidateModelConfigTest, SpecificNeedsVersions) {
  auto config = Make("version_policy { specific {} }");
  ExpectInvalid(config, {"model 'm'", "'version_policy.specific.versions'"});
}

TEST(ValidateModelConfigTest, SpecificVersionsAreNonNegative) {
  auto config = Make("version_policy { specific { versions: [ 1, -3 ] } }");
  ExpectInvalid(config, {"'version_policy.specific.versions' must be >= 0, got -3"});
}

TEST(ValidateModelConfigTest, VersionPolicyIsRequired) {
  auto config = Make();
  config.clear_version_policy();
  ExpectInvalid(config, {"must specify 'version_policy'"});
}

TEST(ValidateModelConfigTest, InstanceGroupCountMustBePositive) {
  auto config = Make();
  config.mutable_instance_group(0)->set_count(0);
  ExpectInvalid(config, {"instance group m of model m", "'count' 0"});
}

TEST(ValidateModelConfigTest, InstanceCountIsCappedPerModel) {
  auto config = Make();
  config.mutable_instance_group(0)->set_count(kMaxInstancesPerModel);
  EXPECT_TRUE(Validate(config).ok()) << Validate(config).message();
  // The cap is on the sum over groups.
  auto* second = config.add_instance_group();
  *second = config.instance_group(0);
  second->set_name("g2");
  second->set_count(1);
  ExpectInvalid(config, {"'instance_group' asks for 513 instances; at most 512 are allowed"});
  config.mutable_instance_group(1)->set_count(2000000000);
  config.mutable_instance_group(0)->set_count(2000000000);
  ExpectInvalid(config, {"asks for 4000000000 instances"});
}

TEST(ValidateModelConfigTest, TensorCountIsCappedAtWhatARequestMayCarry) {
  auto config = Make();
  for (int i = 0; i < 4096; ++i) {
    auto* in = config.add_input();
    *in = config.input(0);
    in->set_name("IN" + std::to_string(i));
  }
  ExpectInvalid(config, {"has 4097 inputs; at most 4096 are supported"});
}

TEST(ValidateModelConfigTest, CpuInstanceGroupMayNotListGpus) {
  auto config = Make();
  config.mutable_instance_group(0)->add_gpus(0);
  ExpectInvalid(config, {"instance group m of model m has kind KIND_CPU but specifies"});
}

TEST(ValidateModelConfigTest, UnresolvedAutoKindIsRejected) {
  auto config = Make();
  config.mutable_instance_group(0)->set_kind(inference::ModelInstanceGroup::KIND_AUTO);
  ExpectInvalid(config, {"instance group m of model m has unexpected kind KIND_AUTO"});
}

constexpr char kWarmup[] = R"cfg(
model_warmup [ {
  name: "w"
  batch_size: 2
  inputs { key: "IN" value { data_type: TYPE_FP32 dims: [ 16 ] random_data: true } }
} ])cfg";

TEST(ValidateModelConfigTest, ValidWarmup) { EXPECT_TRUE(Validate(Make(kWarmup)).ok()); }

TEST(ValidateModelConfigTest, WarmupNeedsName) {
  auto config = Make(kWarmup);
  config.mutable_model_warmup(0)->clear_name();
  ExpectInvalid(config, {"model_warmup 0: must specify 'name'"});
}

TEST(ValidateModelConfigTest, WarmupBatchSizeWithinMax) {
  auto config = Make(kWarmup);
  config.mutable_model_warmup(0)->set_batch_size(9);
  ExpectInvalid(config, {"model_warmup 'w'", "'batch_size' 9 must be <= max_batch_size 8"});
}

TEST(ValidateModelConfigTest, WarmupNeedsInputs) {
  auto config = Make(kWarmup);
  config.mutable_model_warmup(0)->clear_inputs();
  ExpectInvalid(config, {"model_warmup 'w'", "'inputs'"});
}

TEST(ValidateModelConfigTest, WarmupInputNeedsData) {
  auto config = Make(kWarmup);
  (*config.mutable_model_warmup(0)->mutable_inputs())["IN"].clear_input_data_type();
  ExpectInvalid(config, {"model_warmup 'w' input 'IN'", "'zero_data'"});
}

TEST(ValidateModelConfigTest, WarmupDataFileStaysInside) {
  auto config = Make(kWarmup);
  (*config.mutable_model_warmup(0)->mutable_inputs())["IN"].set_input_data_file("/etc/passwd");
  ExpectInvalid(config, {"model_warmup 'w' input 'IN'", "'input_data_file'"});
}

TEST(ValidateModelConfigTest, WarmupDimsAreConcrete) {
  auto config = Make(kWarmup);
  (*config.mutable_model_warmup(0)->mutable_inputs())["IN"].set_dims(0, -1);
  ExpectInvalid(config, {"model_warmup 'w' input 'IN'", "'dims'"});
}

TEST(ValidateModelConfigTest, DecoupledModelsCannotUseResponseCache) {
  auto config =
      Make("model_transaction_policy { decoupled: true } response_cache { enable: true }");
  ExpectInvalid(config, {"'response_cache'", "'decoupled'"});
}

TEST(ValidateModelConfigTest, MetricControlNeedsBuckets) {
  auto config =
      Make("model_metrics { metric_control [ { metric_identifier { family: \"f\" } } ] }");
  ExpectInvalid(config, {"model_metrics", "'histogram_options.buckets'"});
}

}  // namespace
}  // namespace nereid::config
