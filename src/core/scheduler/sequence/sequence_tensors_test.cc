#include "core/scheduler/sequence/sequence_tensors.h"

#include <gtest/gtest.h>

#include <cstring>

namespace nereid {
namespace {

SequenceOptions Options(int max_batch_size) {
  SequenceOptions o;
  o.max_batch_size = max_batch_size;
  o.start =
      ControlSpec{"START", DataType::kInt32, {std::string(4, '\0'), std::string("\1\0\0\0", 4)}};
  o.ready = ControlSpec{"READY", DataType::kBool, {std::string(1, '\0'), std::string(1, '\1')}};
  o.corrid = CorridSpec{"CORRID", DataType::kUint64};
  StateSpec s;
  s.input_name = "STATE_IN";
  s.output_name = "STATE_OUT";
  s.data_type = DataType::kFp32;
  s.dims = {-1, 2};
  o.states.push_back(s);
  return o;
}

const InferInput* Find(const InferenceRequest& r, const std::string& name) {
  for (const auto& in : r.inputs) {
    if (in.name == name) return &in;
  }
  return nullptr;
}

TEST(SequenceTensorsTest, StartRequestGetsControlsAndOneRowOfVariableState) {
  const SequenceOptions o = Options(4);
  InferenceRequest r;
  CorrelationId id;
  id.number = 42;
  AddSequenceInputs(o, true, false, true, id, nullptr, &r);
  const InferInput* start = Find(r, "START");
  ASSERT_NE(start, nullptr);
  EXPECT_EQ(start->shape, (Shape{1, 1}));
  EXPECT_EQ(std::string(start->data.data(), 4), std::string("\1\0\0\0", 4));
  const InferInput* corrid = Find(r, "CORRID");
  uint64_t v = 0;
  std::memcpy(&v, corrid->data.data(), 8);
  EXPECT_EQ(v, 42u);
  const InferInput* state = Find(r, "STATE_IN");
  EXPECT_EQ(state->shape, (Shape{1, 1, 2}));  // -1 became 1
  EXPECT_EQ(state->data.size(), 8u);
}

TEST(SequenceTensorsTest, LaterRequestGetsStoredState) {
  const SequenceOptions o = Options(0);
  StoredState stored;
  stored.valid = true;
  stored.shapes = {{3, 2}};
  stored.data = {std::string(24, 'x')};
  InferenceRequest r;
  AddSequenceInputs(o, false, false, true, CorrelationId{}, &stored, &r);
  const InferInput* state = Find(r, "STATE_IN");
  EXPECT_EQ(state->shape, (Shape{3, 2}));  // no batch dimension
  EXPECT_EQ(std::string(state->data.data(), state->data.size()), std::string(24, 'x'));
  EXPECT_EQ(Find(r, "START")->shape, (Shape{1}));
}

TEST(SequenceTensorsTest, FillerIsZeroWithReadyFalse) {
  const SequenceOptions o = Options(2);
  InferenceRequest like;
  AddSequenceInputs(o, true, false, true, CorrelationId{false, 9, ""}, nullptr, &like);
  auto filler = MakeFillerRequest(o, like);
  const InferInput* ready = Find(*filler, "READY");
  EXPECT_EQ(std::string(ready->data.data(), 1), std::string(1, '\0'));
  const InferInput* corrid = Find(*filler, "CORRID");
  EXPECT_EQ(std::string(corrid->data.data(), 8), std::string(8, '\0'));
}

TEST(SequenceTensorsTest, StringCorrid) {
  SequenceOptions o = Options(1);
  o.corrid->data_type = DataType::kBytes;
  InferenceRequest r;
  CorrelationId id;
  id.is_string = true;
  id.text = "abc";
  AddSequenceInputs(o, false, false, true, id, nullptr, &r);
  const InferInput* corrid = Find(r, "CORRID");
  EXPECT_EQ(std::string(corrid->data.data(), corrid->data.size()), std::string("\3\0\0\0abc", 7));
}

TEST(SequenceTensorsTest, TakeStateOutputsKeepsOnlyClientOutputs) {
  const SequenceOptions o = Options(1);
  ModelInfo model;
  model.name = "m";
  InferenceResponse resp;
  resp.outputs.push_back({"OUT", DataType::kFp32, {1, 1}, std::string(4, 'a')});
  resp.outputs.push_back({"STATE_OUT", DataType::kFp32, {1, 2, 2}, std::string(16, 'b')});
  StoredState state;
  ASSERT_TRUE(TakeStateOutputs(model, o, {"OUT"}, &resp, &state).ok());
  ASSERT_EQ(resp.outputs.size(), 1u);
  EXPECT_EQ(resp.outputs[0].name, "OUT");
  EXPECT_TRUE(state.valid);
  EXPECT_EQ(state.shapes[0], (Shape{2, 2}));
  EXPECT_EQ(state.data[0], std::string(16, 'b'));
}

TEST(SequenceTensorsTest, StateOfTheWrongShapeIsAnError) {
  const SequenceOptions o = Options(1);
  ModelInfo model;
  model.name = "m";
  InferenceResponse resp;
  resp.outputs.push_back({"STATE_OUT", DataType::kFp32, {1, 2, 3}, std::string(24, 'b')});
  StoredState state;
  Status s = TakeStateOutputs(model, o, {}, &resp, &state);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("does not match the state dims [-1,2]"), std::string::npos);
  EXPECT_FALSE(state.valid);
}

TEST(SequenceTensorsTest, ExecInfoAddsControlAndStateTensors) {
  ModelInfo model;
  model.inputs.push_back({"IN", DataType::kFp32, {1}, false, {}, false});
  model.outputs.push_back({"STATE_OUT", DataType::kFp32, {-1, 2}, false, {}, false});
  const ModelInfo info = SequenceExecInfo(model, Options(1));
  EXPECT_NE(info.FindInput("START"), nullptr);
  EXPECT_NE(info.FindInput("READY"), nullptr);
  EXPECT_NE(info.FindInput("CORRID"), nullptr);
  EXPECT_NE(info.FindInput("STATE_IN"), nullptr);
  EXPECT_EQ(info.outputs.size(), 1u);  // the state output was already listed
}

}  // namespace
}  // namespace nereid
