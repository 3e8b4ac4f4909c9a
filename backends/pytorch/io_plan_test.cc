#include "pytorch/io_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace nereid::backends::pytorch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

IoConfig Io(std::string name, DataType type, std::vector<int64_t> dims) {
  IoConfig io;
  io.name = std::move(name);
  io.data_type = type;
  io.dims = std::move(dims);
  return io;
}

TorchModelConfig Config(std::vector<IoConfig> inputs, std::vector<IoConfig> outputs,
                        int64_t max_batch_size = 8) {
  TorchModelConfig c;
  c.base.name = "m";
  c.base.max_batch_size = max_batch_size;
  c.base.inputs = std::move(inputs);
  c.base.outputs = std::move(outputs);
  return c;
}

ForwardSignature Sig(std::vector<std::pair<std::string, ValueKind>> args,
                     std::vector<ValueKind> returns, bool tuple = true) {
  ForwardSignature s;
  for (auto& [name, kind] : args) {
    s.arguments.push_back({name, kind, kind == ValueKind::kStringList ? "List[str]" : "Tensor"});
  }
  s.returns = std::move(returns);
  s.returns_tuple = tuple;
  s.return_type = "(Tensor, Tensor)";
  return s;
}

constexpr auto kT = ValueKind::kTensor;
constexpr auto kS = ValueKind::kStringList;
constexpr auto kI32 = DataType::kInt32;

TEST(NamedIndexTest, FollowsTritonsRule) {
  EXPECT_EQ(NamedIndex("INPUT__0"), 0u);
  EXPECT_EQ(NamedIndex("x__12"), 12u);
  EXPECT_EQ(NamedIndex("INPUT0"), std::nullopt);
  EXPECT_EQ(NamedIndex("INPUT__"), std::nullopt);
  EXPECT_EQ(NamedIndex("a__b__1"), std::nullopt);  // digits must follow the first "__"
  EXPECT_EQ(NamedIndex("INPUT__1x"), std::nullopt);
}

TEST(IoPlanTest, NamedIndexMapsByPosition) {
  auto c = Config({Io("INPUT__1", kI32, {16}), Io("INPUT__0", kI32, {16})},
                  {Io("OUTPUT__1", kI32, {16}), Io("OUTPUT__0", kI32, {16})});
  auto plan = PlanModelIo("m", c, Sig({{"a", kT}, {"b", kT}}, {kT, kT}));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->input_convention, NamingConvention::kNamedIndex);
  EXPECT_EQ(plan->inputs[0].index, 1u);
  EXPECT_EQ(plan->inputs[1].index, 0u);
  EXPECT_THAT(plan->inputs[0].shape, ElementsAre(-1, 16));
  EXPECT_EQ(plan->outputs[0].index, 1u);
  EXPECT_EQ(plan->outputs[1].index, 0u);
  EXPECT_EQ(plan->return_count, 2u);
}

TEST(IoPlanTest, ForwardArgumentNamesWin) {
  auto c = Config({Io("subtrahend", kI32, {4}), Io("minuend", kI32, {4})},
                  {Io("OUTPUT__0", kI32, {4})}, 0);
  auto plan = PlanModelIo("m", c, Sig({{"minuend", kT}, {"subtrahend", kT}}, {kT, kT}));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->input_convention, NamingConvention::kForwardArgument);
  EXPECT_EQ(plan->inputs[0].index, 1u);
  EXPECT_EQ(plan->inputs[1].index, 0u);
  EXPECT_THAT(plan->inputs[0].shape, ElementsAre(4));
}

TEST(IoPlanTest, InputNamesMatchingNeitherConventionBindInConfigurationOrder) {
  // Triton's STRICT_CONFIG_ORDERING: `y` is not an argument, `a` no <name>__<index>, so the i-th
  // configured input is the i-th argument, whatever its name says.
  auto c = Config({Io("b", kI32, {4}), Io("y", kI32, {4})},
                  {Io("OUTPUT__0", kI32, {4}), Io("OUTPUT__1", kI32, {4})});
  auto plan = PlanModelIo("m", c, Sig({{"a", kT}, {"b", kT}}, {kT, kT}));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->input_convention, NamingConvention::kStrictConfigOrdering);
  EXPECT_EQ(plan->inputs[0].index, 0u);
  EXPECT_EQ(plan->inputs[1].index, 1u);
  ASSERT_EQ(plan->warnings.size(), 1u);
  EXPECT_EQ(plan->warnings[0],
            "input 'b' or previous input(s) are neither an input argument to the model 'm' nor do "
            "they follow the <name>__<index> naming convention. Falling back to enforcing strict "
            "ordering from model configuration.");
}

TEST(IoPlanTest, MixedInputConventionsBindInConfigurationOrder) {
  auto c = Config({Io("INPUT__1", kI32, {4}), Io("a", kI32, {4})}, {Io("OUTPUT__0", kI32, {4})});
  auto plan = PlanModelIo("m", c, Sig({{"a", kT}, {"b", kT}}, {kT, kT}));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->input_convention, NamingConvention::kStrictConfigOrdering);
  EXPECT_EQ(plan->inputs[0].index, 0u);
  EXPECT_EQ(plan->inputs[1].index, 1u);
  ASSERT_EQ(plan->warnings.size(), 1u);
  EXPECT_THAT(plan->warnings[0], HasSubstr("input 'a' or previous input(s)"));
}

TEST(IoPlanTest, ConfigurationOrderStillNeedsTheArgumentCount) {
  auto c = Config({Io("x", kI32, {4}), Io("y", kI32, {4}), Io("z", kI32, {4})},
                  {Io("OUTPUT__0", kI32, {4})});
  auto plan = PlanModelIo("m", c, Sig({{"a", kT}, {"b", kT}}, {kT, kT}));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().message(),
            "unable to load model 'm', configuration expects 3 inputs, model provides 2");
}

TEST(IoPlanTest, OutputNamesWithoutIndexBindInConfigurationOrder) {
  auto c = Config({Io("INPUT__0", kI32, {4}), Io("INPUT__1", kI32, {4})},
                  {Io("diff", kI32, {4}), Io("OUTPUT__0", kI32, {4})});
  auto plan = PlanModelIo("m", c, Sig({{"a", kT}, {"b", kT}}, {kT, kT}));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->input_convention, NamingConvention::kNamedIndex);
  EXPECT_EQ(plan->output_convention, NamingConvention::kStrictConfigOrdering);
  EXPECT_EQ(plan->outputs[0].index, 0u);
  EXPECT_EQ(plan->outputs[1].index, 1u);
  ASSERT_EQ(plan->warnings.size(), 1u);
  EXPECT_EQ(plan->warnings[0],
            "output 'diff' or previous output(s) of the model 'm' do not follow the "
            "<name>__<index> naming convention. Falling back to enforcing strict ordering from "
            "model configuration.");
}

TEST(IoPlanTest, MoreOutputsInConfigurationOrderThanReturnedValuesFail) {
  auto c = Config({Io("INPUT__0", kI32, {4}), Io("INPUT__1", kI32, {4})},
                  {Io("sum", kI32, {4}), Io("diff", kI32, {4}), Io("prod", kI32, {4})});
  auto plan = PlanModelIo("m", c, Sig({{"a", kT}, {"b", kT}}, {kT, kT}));
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(),
              HasSubstr("unable to load model 'm', output 'prod' refers to output index 2, but "
                        "the model's forward returns 2 value(s)"));
}

TEST(IoPlanTest, StateNeedsNamedIndexOutputs) {
  auto c = Config({Io("INPUT__0", kI32, {1})}, {Io("out", kI32, {1})}, 4);
  c.state_inputs.push_back({"STATE__1", kI32, {1}});
  c.state_outputs.push_back({"OUTPUT_STATE__1", kI32, {1}});
  auto plan = PlanModelIo("m", c, Sig({{"x", kT}, {"state", kT}}, {kT, kT}));
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(), HasSubstr("sequence batching with state"));
}

TEST(IoPlanTest, DictInputTakesAnyNames) {
  ForwardSignature dict = Sig({{"inputs", ValueKind::kTensorDict}}, {kT});
  auto plan = PlanModelIo(
      "m", Config({Io("x", kI32, {4}), Io("y", kI32, {4})}, {Io("OUTPUT__0", kI32, {4})}), dict);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->dict_input);
  EXPECT_EQ(plan->input_convention, NamingConvention::kDictKey);
  EXPECT_EQ(plan->inputs[1].name, "y");
}

TEST(IoPlanTest, ArgumentCountMismatchIsTritonsError) {
  auto c = Config({Io("INPUT__0", kI32, {4}), Io("INPUT__1", kI32, {4}), Io("INPUT__2", kI32, {4})},
                  {Io("OUTPUT__0", kI32, {4})});
  auto plan = PlanModelIo("m", c, Sig({{"a", kT}, {"b", kT}}, {kT, kT}));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().message(),
            "unable to load model 'm', configuration expects 3 inputs, model provides 2");
}

TEST(IoPlanTest, IndexPastArgumentsAndDuplicatesFail) {
  auto past = PlanModelIo(
      "m",
      Config({Io("INPUT__0", kI32, {4}), Io("INPUT__5", kI32, {4})}, {Io("OUTPUT__0", kI32, {4})}),
      Sig({{"a", kT}, {"b", kT}}, {kT}));
  ASSERT_FALSE(past.ok());
  EXPECT_THAT(past.status().message(), HasSubstr("refers to forward argument 5"));
  auto dup = PlanModelIo(
      "m", Config({Io("A__0", kI32, {4}), Io("B__0", kI32, {4})}, {Io("OUTPUT__0", kI32, {4})}),
      Sig({{"a", kT}, {"b", kT}}, {kT}));
  ASSERT_FALSE(dup.ok());
  EXPECT_THAT(dup.status().message(), HasSubstr("both refer to forward argument 0"));
}

TEST(IoPlanTest, StringsNeedListArguments) {
  auto ok = PlanModelIo("m",
                        Config({Io("INPUT__0", DataType::kBytes, {-1})},
                               {Io("OUTPUT__0", DataType::kBytes, {-1})}, 0),
                        Sig({{"s", kS}}, {kS}, false));
  EXPECT_TRUE(ok.ok()) << ok.status().ToString();
  auto bad = PlanModelIo("m",
                         Config({Io("INPUT__0", DataType::kBytes, {-1})},
                                {Io("OUTPUT__0", DataType::kBytes, {-1})}, 0),
                         Sig({{"s", kT}}, {kS}, false));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("TYPE_STRING inputs need List[str]"));
  auto bad_out = PlanModelIo(
      "m", Config({Io("INPUT__0", kI32, {-1})}, {Io("OUTPUT__0", DataType::kBytes, {-1})}, 0),
      Sig({{"x", kT}}, {kT}, false));
  ASSERT_FALSE(bad_out.ok());
  EXPECT_THAT(bad_out.status().message(), HasSubstr("is returned as Tensor"));
  auto two_dims = PlanModelIo("m",
                              Config({Io("INPUT__0", DataType::kBytes, {-1})},
                                     {Io("OUTPUT__0", DataType::kBytes, {-1})}, 8),
                              Sig({{"s", kS}}, {kS}, false));
  ASSERT_FALSE(two_dims.ok());
  EXPECT_THAT(two_dims.status().message(), HasSubstr("1 dimensional List of String"));
}

TEST(IoPlanTest, UnsupportedTypesAndEmptyConfigsFail) {
  auto u16 = PlanModelIo(
      "m",
      Config({Io("INPUT__0", DataType::kUint16, {4})}, {Io("OUTPUT__0", DataType::kUint16, {4})}),
      Sig({{"x", kT}}, {kT}, false));
  ASSERT_FALSE(u16.ok());
  EXPECT_EQ(u16.status().message(),
            "unsupported datatype TYPE_UINT16 for input 'INPUT__0' for model 'm'");
  auto none = PlanModelIo("m", Config({}, {}), Sig({{"x", kT}}, {kT}, false));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(),
            "model configuration must contain at least one input, none were specified.");
}

TEST(IoPlanTest, ReturnTypeChecks) {
  auto c =
      Config({Io("INPUT__0", kI32, {4})}, {Io("OUTPUT__0", kI32, {4}), Io("OUTPUT__2", kI32, {4})});
  auto past = PlanModelIo("m", c, Sig({{"x", kT}}, {kT, kT}));
  ASSERT_FALSE(past.ok());
  EXPECT_THAT(past.status().message(), HasSubstr("refers to output index 2"));
  ForwardSignature dict = Sig({{"x", kT}}, {ValueKind::kOther}, false);
  dict.return_type = "Dict(str, Tensor)";
  auto bad =
      PlanModelIo("m", Config({Io("INPUT__0", kI32, {4})}, {Io("OUTPUT__0", kI32, {4})}), dict);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("returns Dict(str, Tensor); outputs must be"));
  auto any = PlanModelIo("m", Config({Io("INPUT__0", kI32, {4})}, {Io("OUTPUT__0", kI32, {4})}),
                         Sig({{"x", kT}}, {ValueKind::kAny}, false));
  ASSERT_TRUE(any.ok()) << any.status().ToString();
  EXPECT_FALSE(any->return_count.has_value());
}

TEST(IoPlanTest, DictInputTakesEveryInputByName) {
  auto plan = PlanModelIo(
      "m", Config({Io("x", kI32, {4}), Io("y", kI32, {4})}, {Io("OUTPUT__0", kI32, {4})}),
      Sig({{"inputs", ValueKind::kTensorDict}}, {kT}, false));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->dict_input);
  EXPECT_EQ(plan->inputs.size(), 2u);
  auto two_dicts =
      PlanModelIo("m", Config({Io("x", kI32, {4})}, {Io("OUTPUT__0", kI32, {4})}),
                  Sig({{"a", ValueKind::kTensorDict}, {"b", ValueKind::kTensorDict}}, {kT}, false));
  ASSERT_FALSE(two_dicts.ok());
  EXPECT_THAT(two_dicts.status().message(), HasSubstr("multiple inputs of kind DictType"));
}

TEST(IoPlanTest, SequenceControlsAndStatesAreOrdinaryArgumentsAndOutputs) {
  auto c = Config({Io("INPUT__0", kI32, {1})}, {Io("OUTPUT__0", kI32, {1})}, 4);
  c.controls.push_back({"START__1", DataType::kInt32, {1}});
  c.state_inputs.push_back({"STATE__2", kI32, {1}});
  c.state_outputs.push_back({"OUTPUT_STATE__1", kI32, {1}});
  auto plan = PlanModelIo("m", c, Sig({{"x", kT}, {"start", kT}, {"state", kT}}, {kT, kT}));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->inputs.size(), 3u);
  EXPECT_EQ(plan->inputs[1].name, "START__1");
  EXPECT_EQ(plan->inputs[1].index, 1u);
  EXPECT_EQ(plan->inputs[2].name, "STATE__2");
  EXPECT_EQ(plan->inputs[2].index, 2u);
  EXPECT_THAT(plan->inputs[2].shape, ElementsAre(-1, 1));
  ASSERT_EQ(plan->outputs.size(), 2u);
  EXPECT_EQ(plan->outputs[1].name, "OUTPUT_STATE__1");
  EXPECT_EQ(plan->outputs[1].index, 1u);

  auto named = Config({Io("x", kI32, {1})}, {Io("OUTPUT__0", kI32, {1})}, 4);
  named.state_inputs.push_back({"STATE__1", kI32, {1}});
  named.state_outputs.push_back({"OUTPUT_STATE__1", kI32, {1}});
  auto bad = PlanModelIo("m", named, Sig({{"x", kT}, {"state", kT}}, {kT, kT}));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("sequence batching with state"));
}

TorchModelConfig RaggedConfig(std::string input, std::string target, std::string out0,
                              std::string out1) {
  auto c = Config({Io(input, DataType::kFp32, {-1})},
                  {Io(out0, DataType::kFp32, {1}), Io(out1, DataType::kFp32, {-1})});
  c.base.inputs[0].ragged = true;
  c.base.batch_inputs = {{"BATCH_ACCUMULATED_ELEMENT_COUNT", {target}, kI32, input}};
  c.base.batch_output_targets = {out1};
  return c;
}

TEST(IoPlanTest, BatchInputsAreMoreArgumentsAndRaggedInputsAreFlat) {
  auto plan = PlanModelIo("m", RaggedConfig("INPUT__0", "INDEX__1", "SUM__0", "OUT__1"),
                          Sig({{"x", kT}, {"index", kT}}, {kT, kT}));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->inputs.size(), 2u);
  EXPECT_THAT(plan->inputs[0].shape, ElementsAre(-1));  // no batch dimension
  EXPECT_EQ(plan->inputs[1].name, "INDEX__1");
  EXPECT_EQ(plan->inputs[1].index, 1u);
  EXPECT_EQ(plan->inputs[1].data_type, kI32);
  EXPECT_FALSE(plan->outputs[0].scatter);
  EXPECT_TRUE(plan->outputs[1].scatter);

  auto by_name = PlanModelIo("m", RaggedConfig("x", "index", "SUM__0", "OUT__1"),
                             Sig({{"index", kT}, {"x", kT}}, {kT, kT}));
  ASSERT_TRUE(by_name.ok()) << by_name.status().ToString();
  EXPECT_EQ(by_name->input_convention, NamingConvention::kForwardArgument);
  EXPECT_EQ(by_name->inputs[1].index, 0u);

  auto by_order = PlanModelIo("m", RaggedConfig("values", "ends", "SUM__0", "OUT__1"),
                              Sig({{"x", kT}, {"index", kT}}, {kT, kT}));
  ASSERT_TRUE(by_order.ok()) << by_order.status().ToString();
  EXPECT_EQ(by_order->input_convention, NamingConvention::kStrictConfigOrdering);
  EXPECT_EQ(by_order->inputs[1].index, 1u);
}

TEST(IoPlanTest, BatchInputsCountAsArguments) {
  auto plan = PlanModelIo("m", RaggedConfig("INPUT__0", "INDEX__1", "SUM__0", "OUT__1"),
                          Sig({{"x", kT}}, {kT, kT}));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().message(),
            "unable to load model 'm', configuration expects 2 inputs, model provides 1");
}

}  // namespace
}  // namespace nereid::backends::pytorch
