#include "onnxruntime/autocomplete.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/config_json.h"

namespace nereid::backends::ort {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Two batchable inputs and one batchable output, like Triton's "simple" model.
ModelIo BatchableIo() {
  return {{{"INPUT0", DataType::kInt32, {-1, 16}}, {"INPUT1", DataType::kFp32, {-1, 4, -1}}},
          {{"OUTPUT0", DataType::kInt32, {-1, 16}}}};
}

ModelIo FixedIo() { return {{{"X", DataType::kFp32, {2, 3}}}, {{"Y", DataType::kBytes, {2, 3}}}}; }

// Runs CompleteConfig and parses its result, which must be valid JSON.
rapidjson::Document Complete(std::string_view json, const ModelIo& io, int default_max = 4) {
  StatusOr<std::string> out = CompleteConfig(json, io, default_max);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  rapidjson::Document doc;
  if (out.ok()) {
    Status parsed = ParseJsonObject(*out, "completed", &doc);
    EXPECT_TRUE(parsed.ok()) << parsed.ToString() << " in " << *out;
  }
  return doc;
}

// max_batch_size, 0 when absent.
int64_t MaxBatch(const rapidjson::Value& doc) {
  return IntMember(doc, "max_batch_size", 0).value();
}

std::vector<int64_t> Dims(const rapidjson::Value& entry) {
  return IntArrayMember(entry, "dims").value();
}

TEST(OrtAutoCompleteTest, EmptyConfigOfBatchableModel) {
  rapidjson::Document doc = Complete(R"({"name":"simple"})", BatchableIo());
  EXPECT_EQ(MaxBatch(doc), 4);
  // As Triton: a batch size chosen by auto-complete above 1 enables the dynamic batcher.
  ASSERT_TRUE(doc.HasMember("dynamic_batching"));
  EXPECT_TRUE(doc["dynamic_batching"].IsObject());
  EXPECT_EQ(doc["dynamic_batching"].MemberCount(), 0u);
  EXPECT_EQ(StringMember(doc, "platform"), "onnxruntime_onnx");
  EXPECT_EQ(StringMember(doc, "backend"), "onnxruntime");
  EXPECT_EQ(StringMember(doc, "name"), "simple");
  ASSERT_EQ(doc["input"].Size(), 2u);
  EXPECT_EQ(StringMember(doc["input"][0], "name"), "INPUT0");
  EXPECT_EQ(StringMember(doc["input"][0], "data_type"), "TYPE_INT32");
  EXPECT_THAT(Dims(doc["input"][0]), ElementsAre(16));
  EXPECT_EQ(StringMember(doc["input"][1], "data_type"), "TYPE_FP32");
  EXPECT_THAT(Dims(doc["input"][1]), ElementsAre(4, -1));
  ASSERT_EQ(doc["output"].Size(), 1u);
  EXPECT_EQ(StringMember(doc["output"][0], "name"), "OUTPUT0");
  EXPECT_THAT(Dims(doc["output"][0]), ElementsAre(16));
}

TEST(OrtAutoCompleteTest, SequenceControlAndStateTensorsAreNotAdded) {
  ModelIo io = BatchableIo();
  io.inputs.push_back({"START", DataType::kInt32, {-1, 1}});
  io.inputs.push_back({"STATE_IN", DataType::kFp32, {-1, 16}});
  io.outputs.push_back({"STATE_OUT", DataType::kFp32, {-1, 16}});
  rapidjson::Document doc = Complete(R"({"sequence_batching":{
      "control_input":[{"name":"START","control":[{"kind":"CONTROL_SEQUENCE_START",
                                                   "int32_false_true":[0,1]}]}],
      "state":[{"input_name":"STATE_IN","output_name":"STATE_OUT","data_type":"TYPE_FP32",
                "dims":[16]}]}})",
                                     io);
  ASSERT_EQ(doc["input"].Size(), 2u);  // INPUT0, INPUT1 only
  ASSERT_EQ(doc["output"].Size(), 1u);
  EXPECT_EQ(StringMember(doc["output"][0], "name"), "OUTPUT0");
  EXPECT_FALSE(doc.HasMember("dynamic_batching"));  // the sequence batcher is the scheduler
}

TEST(OrtAutoCompleteTest, BatchInputTargetsAreNotAdded) {
  ModelIo io{{{"IN", DataType::kFp32, {-1}}, {"IDX", DataType::kInt32, {-1}}},
             {{"OUT", DataType::kFp32, {-1}}}};
  rapidjson::Document doc = Complete(R"({"max_batch_size":8,
      "input":[{"name":"IN","data_type":"TYPE_FP32","dims":[-1],"allow_ragged_batch":true}],
      "batch_input":[{"kind":"BATCH_ACCUMULATED_ELEMENT_COUNT","target_name":["IDX"],
                      "data_type":"TYPE_INT32","source_input":["IN"]}]})",
                                     io);
  ASSERT_EQ(doc["input"].Size(), 1u);  // IN only: the core feeds IDX
  EXPECT_THAT(Dims(doc["input"][0]), ElementsAre(-1));
  ASSERT_EQ(doc["output"].Size(), 1u);
}

TEST(OrtAutoCompleteTest, DefaultMaxBatchSizeOneAddsNoDynamicBatching) {
  rapidjson::Document doc = Complete("{}", BatchableIo(), 1);
  EXPECT_EQ(MaxBatch(doc), 1);
  EXPECT_FALSE(doc.HasMember("dynamic_batching"));
}

TEST(OrtAutoCompleteTest, DefaultMaxBatchSizeZeroDisablesBatching) {
  rapidjson::Document doc = Complete("{}", BatchableIo(), 0);
  EXPECT_EQ(MaxBatch(doc), 0);
  EXPECT_THAT(Dims(doc["input"][0]), ElementsAre(-1, 16));
}

TEST(OrtAutoCompleteTest, ExistingSchedulerIsKept) {
  rapidjson::Document doc =
      Complete(R"({"sequence_batching":{"max_sequence_idle_microseconds":5}})", BatchableIo());
  EXPECT_EQ(MaxBatch(doc), 4);
  EXPECT_FALSE(doc.HasMember("dynamic_batching"));
  EXPECT_EQ(doc["sequence_batching"]["max_sequence_idle_microseconds"].GetInt(), 5);
  rapidjson::Document dyn =
      Complete(R"({"dynamic_batching":{"max_queue_delay_microseconds":100}})", BatchableIo());
  EXPECT_EQ(dyn["dynamic_batching"]["max_queue_delay_microseconds"].GetInt(), 100);
}

TEST(OrtAutoCompleteTest, NonBatchableModelKeepsFullShapes) {
  rapidjson::Document doc = Complete(R"({"max_batch_size":0})", FixedIo());
  EXPECT_EQ(MaxBatch(doc), 0);
  EXPECT_FALSE(doc.HasMember("dynamic_batching"));
  EXPECT_THAT(Dims(doc["input"][0]), ElementsAre(2, 3));
  EXPECT_EQ(StringMember(doc["output"][0], "data_type"), "TYPE_STRING");
  EXPECT_THAT(Dims(doc["output"][0]), ElementsAre(2, 3));
}

TEST(OrtAutoCompleteTest, ModelWithOneFixedFirstDimensionCannotBatch) {
  ModelIo io = BatchableIo();
  io.outputs[0].shape = {1, 16};
  rapidjson::Document doc = Complete("{}", io);
  EXPECT_EQ(MaxBatch(doc), 0);
  EXPECT_THAT(Dims(doc["input"][0]), ElementsAre(-1, 16));
  EXPECT_THAT(Dims(doc["output"][0]), ElementsAre(1, 16));
}

TEST(OrtAutoCompleteTest, ScalarModelCannotBatchAndGetsReshape) {
  ModelIo io{{{"S", DataType::kInt64, {}}}, {{"T", DataType::kInt64, {}}}};
  rapidjson::Document doc = Complete("{}", io);
  EXPECT_EQ(MaxBatch(doc), 0);
  EXPECT_THAT(Dims(doc["input"][0]), ElementsAre(1));
  ASSERT_TRUE(doc["input"][0].HasMember("reshape"));
  EXPECT_THAT(IntArrayMember(doc["input"][0]["reshape"], "shape").value(), IsEmpty());
}

TEST(OrtAutoCompleteTest, RankOneBatchedTensorGetsDimsOneAndEmptyReshape) {
  ModelIo io{{{"IDS", DataType::kInt64, {-1}}}, {{"OUT", DataType::kFp32, {-1, 2}}}};
  rapidjson::Document doc = Complete("{}", io);
  EXPECT_EQ(MaxBatch(doc), 4);
  EXPECT_THAT(Dims(doc["input"][0]), ElementsAre(1));
  EXPECT_THAT(IntArrayMember(doc["input"][0]["reshape"], "shape").value(), IsEmpty());
  EXPECT_FALSE(doc["output"][0].HasMember("reshape"));
}

TEST(OrtAutoCompleteTest, GivenMaxBatchSizeIsKept) {
  rapidjson::Document doc = Complete(R"({"max_batch_size":16})", BatchableIo());
  EXPECT_EQ(MaxBatch(doc), 16);
  EXPECT_FALSE(doc.HasMember("dynamic_batching"));  // only added when auto-complete sets it
  EXPECT_THAT(Dims(doc["input"][0]), ElementsAre(16));
}

TEST(OrtAutoCompleteTest, ListedFullRankDimsMeanNoBatching) {
  rapidjson::Document doc = Complete(
      R"({"max_batch_size":0,"input":[{"name":"INPUT0","data_type":"TYPE_INT32","dims":[-1,16]}]})",
      BatchableIo());
  EXPECT_EQ(MaxBatch(doc), 0);
  EXPECT_THAT(Dims(doc["input"][0]), ElementsAre(-1, 16));
  // Unlisted tensors are added with the full model shape.
  ASSERT_EQ(doc["input"].Size(), 2u);
  EXPECT_THAT(Dims(doc["input"][1]), ElementsAre(-1, 4, -1));
  EXPECT_THAT(Dims(doc["output"][0]), ElementsAre(-1, 16));
}

TEST(OrtAutoCompleteTest, ListedRankMinusOneDimsAllowBatching) {
  rapidjson::Document doc = Complete(
      R"({"input":[{"name":"INPUT0","data_type":"TYPE_INT32","dims":[16]}],
          "output":[{"name":"OUTPUT0","data_type":"TYPE_INVALID","dims":[]}]})",
      BatchableIo());
  EXPECT_EQ(MaxBatch(doc), 4);
  ASSERT_EQ(doc["input"].Size(), 2u);
  EXPECT_EQ(StringMember(doc["input"][1], "name"), "INPUT1");
  EXPECT_THAT(Dims(doc["input"][1]), ElementsAre(4, -1));
  EXPECT_EQ(StringMember(doc["output"][0], "data_type"), "TYPE_INT32");
  EXPECT_THAT(Dims(doc["output"][0]), ElementsAre(16));
}

TEST(OrtAutoCompleteTest, ReshapeCountsAsTheListedShape) {
  rapidjson::Document doc = Complete(
      R"({"input":[{"name":"INPUT0","data_type":"TYPE_INT32","dims":[4,4],
                    "reshape":{"shape":[16]}}]})",
      BatchableIo());
  EXPECT_EQ(MaxBatch(doc), 4);
  EXPECT_THAT(Dims(doc["input"][0]), ElementsAre(4, 4));
}

TEST(OrtAutoCompleteTest, ListedValuesAreNotOverwritten) {
  rapidjson::Document doc = Complete(
      R"({"max_batch_size":2,"input":[{"name":"INPUT0","data_type":"TYPE_FP64","dims":[8],
          "format":"FORMAT_NONE","optional":true}],"instance_group":[{"count":3}],
          "platform":"custom_platform","parameters":{"k":{"string_value":"v"}}})",
      BatchableIo());
  const rapidjson::Value& in = doc["input"][0];
  EXPECT_EQ(StringMember(in, "data_type"), "TYPE_FP64");  // validation, not completion, rejects
  EXPECT_THAT(Dims(in), ElementsAre(8));
  EXPECT_EQ(StringMember(in, "format"), "FORMAT_NONE");
  EXPECT_TRUE(in["optional"].GetBool());
  EXPECT_EQ(doc["instance_group"][0]["count"].GetInt(), 3);
  EXPECT_EQ(StringMember(doc, "platform"), "custom_platform");
  EXPECT_EQ(StringMember(doc, "backend"), "onnxruntime");
  EXPECT_EQ(StringMember(doc["parameters"]["k"], "string_value"), "v");
}

TEST(OrtAutoCompleteTest, ConfigOnlyTensorsAreKept) {
  rapidjson::Document doc =
      Complete(R"({"output":[{"name":"EXTRA","data_type":"TYPE_FP32","dims":[1]}]})", FixedIo());
  ASSERT_EQ(doc["output"].Size(), 2u);
  EXPECT_EQ(StringMember(doc["output"][0], "name"), "EXTRA");
  EXPECT_EQ(StringMember(doc["output"][1], "name"), "Y");
}

TEST(OrtAutoCompleteTest, Int64AsStringMaxBatchSize) {
  rapidjson::Document doc = Complete(R"({"max_batch_size":"0"})", BatchableIo());
  EXPECT_EQ(MaxBatch(doc), 4);
}

TEST(OrtAutoCompleteTest, MalformedJsonIsInvalidArgument) {
  for (const char* json :
       {"{", "[]", R"({"input":{}})", R"({"max_batch_size":"a"})", R"({"input":[1]})"}) {
    StatusOr<std::string> out = CompleteConfig(json, BatchableIo(), 4);
    ASSERT_FALSE(out.ok()) << json;
    EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument) << json;
  }
}

TEST(OrtAutoCompleteTest, EscapedNamesStayValidJson) {
  ModelIo io{{{"in\"put", DataType::kBool, {3}}}, {{"out\\put", DataType::kBool, {3}}}};
  rapidjson::Document doc = Complete(R"({"name":"q\"uote"})", io);
  EXPECT_EQ(StringMember(doc["input"][0], "name"), "in\"put");
  EXPECT_EQ(StringMember(doc["output"][0], "name"), "out\\put");
  EXPECT_EQ(StringMember(doc, "name"), "q\"uote");
}

}  // namespace
}  // namespace nereid::backends::ort
