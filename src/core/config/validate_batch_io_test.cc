// batch_input / batch_output / allow_ragged_batch validation: every kind and every error, with
// Triton's texts (model_config_utils.cc ValidateBatchIO) where Triton has one.
#include <string>

#include "core/config/validate_test_util.h"

namespace nereid::config {
namespace {

using testing::ExpectInvalid;
using testing::Make;
using testing::Validate;

std::string BatchInput(const std::string& kind, const std::string& target = "T",
                       const std::string& type = "TYPE_INT32",
                       const std::string& sources = "source_input: \"IN\"") {
  return "batch_input [ { kind: " + kind + " target_name: \"" + target + "\" data_type: " + type +
         " " + sources + " } ]\n";
}

class EveryBatchInputKind : public ::testing::TestWithParam<const char*> {};

TEST_P(EveryBatchInputKind, IsValidWithOneSourceAndInt32OrFp32) {
  EXPECT_TRUE(Validate(Make(BatchInput(GetParam()))).ok());
  EXPECT_TRUE(Validate(Make(BatchInput(GetParam(), "T", "TYPE_FP32"))).ok());
}

TEST_P(EveryBatchInputKind, NeedsExactlyOneSourceInput) {
  ExpectInvalid(Make(BatchInput(GetParam(), "T", "TYPE_INT32", "")),
                {"model 'm'", "batch input kind '", GetParam(), "' expects 1 source input, got 0"});
  ExpectInvalid(Make(BatchInput(GetParam(), "T", "TYPE_INT32", "source_input: [ \"IN\", \"IN\" ]")),
                {"batch input kind '", GetParam(), "' expects 1 source input, got 2"});
}

TEST_P(EveryBatchInputKind, DataTypeMustBeInt32OrFp32) {
  for (const char* type : {"TYPE_INT64", "TYPE_FP64", "TYPE_STRING"}) {
    ExpectInvalid(Make(BatchInput(GetParam(), "T", type)),
                  {"batch input data type must be TYPE_INT32 or TYPE_FP32"});
  }
}

TEST_P(EveryBatchInputKind, SourceInputMustBeConfigured) {
  ExpectInvalid(Make(BatchInput(GetParam(), "T", "TYPE_INT32", "source_input: \"NOPE\"")),
                {"unknown source input name 'NOPE'"});
}

INSTANTIATE_TEST_SUITE_P(Kinds, EveryBatchInputKind,
                         ::testing::Values("BATCH_ELEMENT_COUNT", "BATCH_ACCUMULATED_ELEMENT_COUNT",
                                           "BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO",
                                           "BATCH_MAX_ELEMENT_COUNT_AS_SHAPE", "BATCH_ITEM_SHAPE",
                                           "BATCH_ITEM_SHAPE_FLATTEN"));

TEST(ValidateBatchInputTest, UnknownKindNumber) {
  auto config = Make(BatchInput("BATCH_ELEMENT_COUNT"));
  config.mutable_batch_input(0)->set_kind(static_cast<inference::BatchInput::Kind>(42));
  ExpectInvalid(config, {"unknown batch input kind '42'"});
}

TEST(ValidateBatchInputTest, TargetNameIsRequiredAndNew) {
  ExpectInvalid(Make("batch_input [ { kind: BATCH_ELEMENT_COUNT data_type: TYPE_INT32 "
                     "source_input: \"IN\" } ]"),
                {"batch input kind 'BATCH_ELEMENT_COUNT' must specify a 'target_name'"});
  ExpectInvalid(Make(BatchInput("BATCH_ELEMENT_COUNT", "")), {"has an empty 'target_name'"});
  ExpectInvalid(Make(BatchInput("BATCH_ELEMENT_COUNT", "IN")),
                {"batch input target name 'IN' is also the name of a configured input"});
  ExpectInvalid(Make("batch_input [ { kind: BATCH_ELEMENT_COUNT target_name: \"T\" data_type: "
                     "TYPE_INT32 source_input: \"IN\" }, { kind: BATCH_ITEM_SHAPE target_name: "
                     "\"T\" data_type: TYPE_INT32 source_input: \"IN\" } ]"),
                {"batch input target name 'T' can only be specified once"});
}

TEST(ValidateBatchInputTest, SeveralBatchInputsAndTargets) {
  EXPECT_TRUE(Validate(Make("batch_input [ { kind: BATCH_ELEMENT_COUNT target_name: [ \"A\", "
                            "\"B\" ] data_type: TYPE_FP32 source_input: \"IN\" }, { kind: "
                            "BATCH_ITEM_SHAPE target_name: \"C\" data_type: TYPE_INT32 "
                            "source_input: \"IN\" } ]"))
                  .ok());
}

TEST(ValidateBatchOutputTest, ScatterWithInputShapeIsValid) {
  EXPECT_TRUE(Validate(Make("batch_output [ { kind: BATCH_SCATTER_WITH_INPUT_SHAPE target_name: "
                            "\"OUT\" source_input: \"IN\" } ]"))
                  .ok());
}

TEST(ValidateBatchOutputTest, NeedsExactlyOneSourceInput) {
  ExpectInvalid(Make("batch_output [ { target_name: \"OUT\" } ]"),
                {"batch output kind 'BATCH_SCATTER_WITH_INPUT_SHAPE' expects 1 source input, "
                 "got 0"});
  ExpectInvalid(Make("batch_output [ { target_name: \"OUT\" source_input: [ \"IN\", \"IN\" ] } ]"),
                {"expects 1 source input, got 2"});
}

TEST(ValidateBatchOutputTest, SourceAndTargetsMustBeConfigured) {
  ExpectInvalid(Make("batch_output [ { target_name: \"OUT\" source_input: \"NOPE\" } ]"),
                {"unknown source input name 'NOPE'"});
  ExpectInvalid(Make("batch_output [ { target_name: \"NOPE\" source_input: \"IN\" } ]"),
                {"unknown target output name 'NOPE'"});
}

TEST(ValidateBatchOutputTest, TargetOnlyOnce) {
  ExpectInvalid(Make("batch_output [ { target_name: [ \"OUT\", \"OUT\" ] source_input: \"IN\" } ]"),
                {"target output name 'OUT' can only be specified once"});
  ExpectInvalid(Make("batch_output [ { target_name: \"OUT\" source_input: \"IN\" }, "
                     "{ target_name: \"OUT\" source_input: \"IN\" } ]"),
                {"target output name 'OUT' is the target of more than one batch output"});
}

TEST(ValidateBatchOutputTest, UnknownKindNumber) {
  auto config = Make("batch_output [ { target_name: \"OUT\" source_input: \"IN\" } ]");
  config.mutable_batch_output(0)->set_kind(static_cast<inference::BatchOutput::Kind>(7));
  ExpectInvalid(config, {"unknown batch output kind '7'"});
}

TEST(ValidateRaggedTest, RaggedInputsAreValid) {
  auto config = Make();
  config.mutable_input(0)->set_allow_ragged_batch(true);
  EXPECT_TRUE(Validate(config).ok());
}

}  // namespace
}  // namespace nereid::config
