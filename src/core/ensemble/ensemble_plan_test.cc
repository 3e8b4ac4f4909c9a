#include "core/ensemble/ensemble_plan.h"

#include <gtest/gtest.h>

#include "core/ensemble/ensemble_test_util.h"

namespace nereid {
namespace {

using namespace ensemble_testing;

// IN -> a -> t1 -> c -> OUT, IN -> b -> t2 -> c; and a side branch IN -> d -> SIDE.
inference::ModelConfig Diamond() {
  return Parse(
      "name: \"e\" platform: \"ensemble\"\n"
      "input [ { name: \"IN\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n"
      "output [ { name: \"OUT\" data_type: TYPE_FP32 dims: [ 4 ] },"
      " { name: \"SIDE\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n"
      "ensemble_scheduling { step [ " +
      Step("a", In("x", "IN") + Out("y", "t1")) + ", " + Step("b", In("x", "IN") + Out("y", "t2")) +
      ", " + Step("c", In("x0", "t1") + In("x1", "t2") + Out("y", "OUT")) + ", " +
      Step("d", In("x", "IN") + Out("y", "SIDE")) + " ] }");
}

TEST(EnsemblePlanTest, IndexesTensorsStepsAndConsumers) {
  auto plan = EnsemblePlan::Build(Diamond());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->steps().size(), 4u);
  const int64_t in = plan->FindTensor("IN");
  const int64_t t1 = plan->FindTensor("t1");
  ASSERT_GE(in, 0);
  ASSERT_GE(t1, 0);
  EXPECT_EQ(plan->FindTensor("nope"), -1);
  EXPECT_EQ(plan->producer(in), -1);
  EXPECT_EQ(plan->producer(t1), 0);
  EXPECT_EQ(plan->consumers(in), (std::vector<size_t>{0, 1, 3}));
  EXPECT_EQ(plan->steps()[2].distinct_inputs, 2u);
  EXPECT_EQ(plan->outputs().size(), 2u);
  EXPECT_EQ(plan->tensor_name(plan->outputs()[1]), "SIDE");
}

TEST(EnsemblePlanTest, PrunesStepsNotNeededForTheWantedOutputs) {
  auto plan = EnsemblePlan::Build(Diamond());
  ASSERT_TRUE(plan.ok());
  const size_t side = plan->FindTensor("SIDE");
  const size_t out = plan->FindTensor("OUT");
  EXPECT_EQ(plan->NeededSteps({side}), (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(plan->NeededSteps({out}), (std::vector<bool>{true, true, true, false}));
  EXPECT_EQ(plan->NeededSteps({out, side}), (std::vector<bool>{true, true, true, true}));
}

TEST(EnsemblePlanTest, TensorWrittenTwiceIsRefused) {
  auto plan =
      EnsemblePlan::Build(Parse("name: \"e\" platform: \"ensemble\" ensemble_scheduling { step [ " +
                                Step("a", In("x", "IN") + Out("y", "T")) + ", " +
                                Step("b", In("x", "IN") + Out("y", "T")) + " ] }"));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().message(),
            "ensemble tensor 'T' can appear in an output map only once for ensemble 'e' step 1");
}

}  // namespace
}  // namespace nereid
