#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/config/validate_test_util.h"

namespace nereid::config {
namespace {

using testing::ExpectInvalid;
using testing::Make;
using testing::Validate;

// An ensemble "m" (IN -> OUT, FP32 [4]) with the given scheduling text.
inference::ModelConfig MakeEnsemble(const std::string& scheduling,
                                    const std::string& io =
                                        "input [ { name: \"IN\" data_type: TYPE_FP32 dims: [ 4 ] "
                                        "} ]\n"
                                        "output [ { name: \"OUT\" data_type: TYPE_FP32 dims: [ 4 "
                                        "] } ]\n") {
  auto config = ParseModelConfigText(
      "name: \"m\" platform: \"ensemble\" max_batch_size: 8\n" + io + scheduling, "e.pbtxt");
  EXPECT_TRUE(config.ok()) << config.status().ToString();
  NormalizeOptions opts;
  opts.model_dir_name = "m";
  EXPECT_TRUE(NormalizeModelConfig(&*config, opts).ok());
  return *config;
}

std::string Step(const std::string& model, const std::string& inputs, const std::string& outputs) {
  return "{ model_name: \"" + model + "\" model_version: -1 " + inputs + " " + outputs + " }";
}
std::string In(const std::string& key, const std::string& value) {
  return "input_map { key: \"" + key + "\" value: \"" + value + "\" }";
}
std::string Out(const std::string& key, const std::string& value) {
  return "output_map { key: \"" + key + "\" value: \"" + value + "\" }";
}
std::string Steps(std::initializer_list<std::string> steps) {
  std::string s = "ensemble_scheduling { step [ ";
  bool first = true;
  for (const auto& step : steps) {
    if (!first) s += ", ";
    s += step;
    first = false;
  }
  return s + " ] }";
}

void ExpectError(const inference::ModelConfig& config, const std::string& text) {
  Status s = Validate(config);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), text);
}

const std::string kOneStep = Steps({Step("a", In("x", "IN"), Out("y", "OUT"))});

TEST(ValidateEnsembleTest, OneStepIsValid) {
  auto config = MakeEnsemble(kOneStep);
  EXPECT_TRUE(Validate(config).ok()) << Validate(config).ToString();
}

TEST(ValidateEnsembleTest, FanOutFanInIsValid) {
  auto config = MakeEnsemble(
      Steps({Step("a", In("x", "IN"), Out("y", "t1")), Step("b", In("x", "IN"), Out("y", "t2")),
             Step("c", In("x0", "t1") + In("x1", "t2"), Out("y", "OUT"))}));
  EXPECT_TRUE(Validate(config).ok()) << Validate(config).ToString();
}

TEST(ValidateEnsembleTest, SchedulingNeedsEnsemblePlatform) {
  ExpectError(Make(kOneStep),
              "ensemble scheduling cannot be set for model 'm' whose platform is not ensemble");
}

TEST(ValidateEnsembleTest, PlatformNeedsScheduling) {
  ExpectError(MakeEnsemble(""),
              "ensemble scheduling must be set for ensemble m whose platform is ensemble");
}

TEST(ValidateEnsembleTest, NoBackend) {
  auto config = MakeEnsemble(kOneStep);
  config.set_backend("identity");
  ExpectError(config,
              "Ensemble model 'm' must have platform type 'ensemble' and empty backend type");
}

TEST(ValidateEnsembleTest, ForbiddenSections) {
  auto config = MakeEnsemble(kOneStep);
  config.add_instance_group()->set_kind(inference::ModelInstanceGroup::KIND_CPU);
  ExpectError(config, "instance group should not be specified for ensemble 'm'");
  config = MakeEnsemble(kOneStep);
  config.mutable_optimization();
  ExpectError(config, "optimization should not be specified for ensemble 'm'");
  config = MakeEnsemble(kOneStep);
  config.add_model_warmup()->set_name("w");
  ExpectError(config, "model_warmup can not be specified for ensemble 'm'");
}

TEST(ValidateEnsembleTest, StepsAndTheirFields) {
  ExpectError(MakeEnsemble("ensemble_scheduling {}"), "must specify 'step' for ensemble 'm'");
  ExpectError(MakeEnsemble(Steps({"{ " + In("x", "IN") + " " + Out("y", "OUT") + " }"})),
              "must specify 'model_name' in step 0 of ensemble 'm'");
  ExpectError(MakeEnsemble(
                  Steps({Step("a", In("x", "IN"), Out("y", "OUT")), Step("b", "", Out("y", "z"))})),
              "must specify 'input_map' in step 1 of ensemble 'm'");
  ExpectError(MakeEnsemble(Steps({Step("a", In("x", "IN"), "")})),
              "must specify 'output_map' in step 0 of ensemble 'm'");
}

TEST(ValidateEnsembleTest, TensorWrittenTwice) {
  ExpectError(MakeEnsemble(Steps({Step("a", In("x", "IN"), Out("y", "OUT")),
                                  Step("b", In("x", "IN"), Out("y", "OUT"))})),
              "ensemble tensor 'OUT' can appear in an output map only once for ensemble 'm' "
              "step 1");
}

TEST(ValidateEnsembleTest, InputNotUsed) {
  ExpectError(MakeEnsemble(kOneStep,
                           "input [ { name: \"IN\" data_type: TYPE_FP32 dims: [ 4 ] }, "
                           "{ name: \"IN2\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n"
                           "output [ { name: \"OUT\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n"),
              "ensemble input 'IN2' for ensemble m' is not used");
}

TEST(ValidateEnsembleTest, OutputNotUsed) {
  ExpectError(MakeEnsemble(kOneStep,
                           "input [ { name: \"IN\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n"
                           "output [ { name: \"OUT\" data_type: TYPE_FP32 dims: [ 4 ] }, "
                           "{ name: \"OUT2\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n"),
              "ensemble output 'OUT2' for ensemble m' is not used");
}

TEST(ValidateEnsembleTest, OutputFedByUnconnectedTensor) {
  ExpectError(
      MakeEnsemble(Steps({Step("a", In("x", "IN"), Out("y", "t1")),
                          Step("b", In("x0", "t1") + In("x1", "nowhere"), Out("y", "OUT"))})),
      "output 'OUT' for ensemble 'm' is not written: at least one of its depending "
      "tensors, 'nowhere', is not connected");
}

TEST(ValidateEnsembleTest, CycleLeavesOutputUnwritten) {
  // IN + t2 -> t1 -> t2: t1 waits for t2, which waits for t1.
  auto config = MakeEnsemble(
      Steps({Step("a", In("x0", "IN") + In("x1", "t2"), Out("y", "t1")),
             Step("b", In("x", "t1"), Out("y", "t2")), Step("c", In("x", "t2"), Out("y", "OUT"))}));
  ExpectError(config,
              "output 'OUT' for ensemble 'm' is not written: at least one of its depending "
              "tensors, 't2', is not connected");
}

TEST(ValidateEnsembleTest, UnusedTensor) {
  ExpectError(MakeEnsemble(Steps({Step("a", In("x", "IN"), Out("y", "OUT") + Out("z", "extra"))})),
              "ensemble tensor 'extra' is unused in ensemble 'm'");
}

}  // namespace
}  // namespace nereid::config
