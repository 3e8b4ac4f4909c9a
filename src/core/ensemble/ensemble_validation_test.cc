#include "core/ensemble/ensemble_validation.h"

#include <gtest/gtest.h>

#include "core/ensemble/ensemble_test_util.h"

namespace nereid {
namespace {

using namespace ensemble_testing;

inference::ModelConfig Model(const std::string& name, int max_batch, const std::string& io) {
  return Parse("name: \"" + name +
               "\" backend: \"identity\" max_batch_size: " + std::to_string(max_batch) + " " + io);
}

const std::string kFp32In16 = "input [ { name: \"INPUT0\" data_type: TYPE_FP32 dims: [ 16 ] } ] ";
const std::string kFp32Out16 =
    "output [ { name: \"OUTPUT0\" data_type: TYPE_FP32 dims: [ 16 ] } ] ";

inference::ModelConfig Ensemble(int max_batch, const std::string& in_type = "TYPE_FP32",
                                const std::string& dims = "16", const std::string& maps = "") {
  return Parse("name: \"e\" platform: \"ensemble\" max_batch_size: " + std::to_string(max_batch) +
               " input [ { name: \"IN\" data_type: " + in_type + " dims: [ " + dims +
               " ] } ] output [ { name: \"OUT\" data_type: TYPE_FP32 dims: [ 16 ] } ] "
               "ensemble_scheduling { step [ " +
               Step("m", maps.empty() ? In("INPUT0", "IN") + Out("OUTPUT0", "OUT") : maps) +
               " ] }");
}

Status Check(const inference::ModelConfig& ensemble, const inference::ModelConfig& model) {
  return ValidateEnsembleComposing(ensemble, {&model});
}

TEST(EnsembleValidationTest, MatchingModelIsValid) {
  EXPECT_TRUE(Check(Ensemble(4), Model("m", 8, kFp32In16 + kFp32Out16)).ok());
  // A non-batching composing model is always allowed.
  EXPECT_TRUE(Check(Ensemble(4), Model("m", 0, kFp32In16 + kFp32Out16)).ok());
}

TEST(EnsembleValidationTest, NonBatchingShapeMatchesBatchingFullShape) {
  // Ensemble non-batching [-1,16] against a batching model's [16] (full [-1,16]).
  EXPECT_TRUE(
      Check(Ensemble(0, "TYPE_FP32", "-1, 16"), Model("m", 8, kFp32In16 + kFp32Out16)).ok());
}

TEST(EnsembleValidationTest, MaxBatchSizeAboveComposing) {
  Status s = Check(Ensemble(16), Model("m", 8, kFp32In16 + kFp32Out16));
  EXPECT_EQ(s.message(),
            "ensemble e allows maximum batch size 16, but it contains model m which only allows "
            "maximum batch size to be 8");
}

TEST(EnsembleValidationTest, DataTypeMismatch) {
  Status s = Check(Ensemble(4, "TYPE_INT32"), Model("m", 8, kFp32In16 + kFp32Out16));
  EXPECT_EQ(s.message(),
            "in ensemble e, ensemble tensor IN: inconsistent data type: TYPE_INT32 is inferred "
            "from model e while TYPE_FP32 is inferred from model m");
}

TEST(EnsembleValidationTest, ShapeMismatch) {
  Status s = Check(Ensemble(4, "TYPE_FP32", "16, 16, 16"), Model("m", 8, kFp32In16 + kFp32Out16));
  EXPECT_EQ(s.message(),
            "in ensemble e, ensemble tensor IN: inconsistent shape: [-1,16,16,16] is inferred "
            "from model e while [-1,16] is inferred from model m");
}

TEST(EnsembleValidationTest, MappingErrors) {
  const auto model = Model("m", 8, kFp32In16 + kFp32Out16);
  EXPECT_EQ(Check(Ensemble(4, "TYPE_FP32", "16", In("NOPE", "IN") + Out("OUTPUT0", "OUT")), model)
                .message(),
            "in ensemble e, ensemble tensor IN is mapping to non-existing input NOPE in model m");
  EXPECT_EQ(
      Check(Ensemble(4, "TYPE_FP32", "16", In("INPUT0", "IN") + Out("NOPE", "OUT")), model)
          .message(),
      "in ensemble e, ensemble tensor OUT is mapped from non-existing output NOPE in model m");
  const auto two = Model("m", 8,
                         "input [ { name: \"INPUT0\" data_type: TYPE_FP32 dims: [ 16 ] },"
                         " { name: \"INPUT1\" data_type: TYPE_FP32 dims: [ 16 ] } ] " +
                             kFp32Out16);
  EXPECT_EQ(Check(Ensemble(4), two).message(),
            "in ensemble e, input INPUT1 in model m is not mapped to any ensemble tensors");
}

TEST(EnsembleValidationTest, OptionalInputMayStayUnmapped) {
  const auto two =
      Model("m", 8,
            "input [ { name: \"INPUT0\" data_type: TYPE_FP32 dims: [ 16 ] },"
            " { name: \"INPUT1\" data_type: TYPE_FP32 dims: [ 16 ] optional: true } ] " +
                kFp32Out16);
  EXPECT_TRUE(Check(Ensemble(4), two).ok());
}

// Triton's decoupled data-flow rule: d is decoupled, m is not; both FP32 [16] -> [16].
struct DecoupledFlow {
  inference::ModelConfig d = Parse(
      "name: \"d\" backend: \"repeat\" max_batch_size: 0 model_transaction_policy { decoupled: "
      "true } " +
      kFp32In16 + kFp32Out16);
  inference::ModelConfig m = Model("m", 0, kFp32In16 + kFp32Out16);
  inference::ModelConfig join =
      Model("join", 0,
            "input [ { name: \"A\" data_type: TYPE_FP32 dims: [ 16 ] }, { name: \"B\" "
            "data_type: TYPE_FP32 dims: [ 16 ] } ] " +
                kFp32Out16);

  static inference::ModelConfig Ens(const std::string& outputs, const std::string& steps) {
    return Parse(
        "name: \"e\" platform: \"ensemble\" max_batch_size: 0 input [ { name: \"IN\" "
        "data_type: TYPE_FP32 dims: [ 16 ] } ] output [ " +
        outputs + " ] ensemble_scheduling { step [ " + steps + " ] }");
  }
};

const std::string kOut = "{ name: \"OUT\" data_type: TYPE_FP32 dims: [ 16 ] }";
const std::string kOut2 = "{ name: \"OUT2\" data_type: TYPE_FP32 dims: [ 16 ] }";

TEST(EnsembleValidationTest, DecoupledChainIsValid) {
  DecoupledFlow f;
  auto e = f.Ens(kOut, Step("d", In("INPUT0", "IN") + Out("OUTPUT0", "t")) + ", " +
                           Step("m", In("INPUT0", "t") + Out("OUTPUT0", "OUT")));
  EXPECT_TRUE(ValidateEnsembleComposing(e, {&f.d, &f.m}).ok());
}

TEST(EnsembleValidationTest, StepJoiningDecoupledAndNotIsRefused) {
  DecoupledFlow f;
  auto e = f.Ens(kOut, Step("d", In("INPUT0", "IN") + Out("OUTPUT0", "t")) + ", " +
                           Step("join", In("A", "t") + In("B", "IN") + Out("OUTPUT0", "OUT")));
  Status s = ValidateEnsembleComposing(e, {&f.d, &f.join});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "in ensemble e, step of model 'join' receives inputs originated from different "
            "decoupled models");
}

TEST(EnsembleValidationTest, OutputsFromDifferentDecoupledStepsAreRefused) {
  DecoupledFlow f;
  auto e = f.Ens(kOut + ", " + kOut2, Step("d", In("INPUT0", "IN") + Out("OUTPUT0", "OUT")) + ", " +
                                          Step("m", In("INPUT0", "IN") + Out("OUTPUT0", "OUT2")));
  EXPECT_EQ(ValidateEnsembleComposing(e, {&f.d, &f.m}).message(),
            "in ensemble e, step of model 'e' receives inputs originated from different decoupled "
            "models");
}

}  // namespace
}  // namespace nereid
