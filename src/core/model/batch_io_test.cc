// Batch inputs, ragged input shapes and scatter shapes (batch_io.h), with Triton's semantics.
#include "core/model/batch_io.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

namespace nereid {
namespace {

using ::testing::ElementsAre;

// A request whose input "IN" (FP32) has `shape`; the data is zeros.
std::unique_ptr<InferenceRequest> Request(Shape shape) {
  auto r = std::make_unique<InferenceRequest>();
  const int64_t count = *ElementCount(shape);
  auto buf = std::make_shared<std::vector<char>>(static_cast<size_t>(count) * 4);
  InferInput in;
  in.name = "IN";
  in.data_type = DataType::kFp32;
  in.shape = std::move(shape);
  in.data = std::span<const char>(buf->data(), buf->size());
  r->inputs.push_back(in);
  r->KeepAlive(buf);
  return r;
}

ModelInfo Model(BatchInputKind kind, DataType type = DataType::kInt32) {
  ModelInfo m;
  m.name = "m";
  m.max_batch_size = 8;
  m.inputs = {{"IN", DataType::kFp32, {-1, -1}}};
  m.inputs[0].ragged = true;
  m.outputs = {{"OUT", DataType::kFp32, {-1, -1}}};
  m.batch_inputs = {{kind, {"T"}, type, "IN"}};
  return m;
}

std::vector<int32_t> Ints(const BatchInputTensor& t) {
  std::vector<int32_t> v(t.data.size() / 4);
  std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

class BatchIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    owned_.push_back(Request({1, 2, 3}));  // 6 elements, one batch item
    owned_.push_back(Request({2, 1, 4}));  // 8 elements, two batch items
    owned_.push_back(Request({1, 5, 1}));  // 5 elements
    for (const auto& r : owned_) items_.push_back(r.get());
  }

  BatchInputTensor One(BatchInputKind kind, DataType type = DataType::kInt32) {
    auto t = MakeBatchInputs(Model(kind, type), items_);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ(t->size(), 1u);
    return t->front();
  }

  std::vector<std::unique_ptr<InferenceRequest>> owned_;
  std::vector<const InferenceRequest*> items_;
};

TEST_F(BatchIoTest, ElementCount) {
  BatchInputTensor t = One(BatchInputKind::kElementCount);
  EXPECT_EQ(t.name, "T");
  EXPECT_EQ(t.data_type, DataType::kInt32);
  EXPECT_THAT(t.shape, ElementsAre(3));
  EXPECT_THAT(Ints(t), ElementsAre(6, 8, 5));
}

TEST_F(BatchIoTest, AccumulatedElementCount) {
  BatchInputTensor t = One(BatchInputKind::kAccumulatedElementCount);
  EXPECT_THAT(t.shape, ElementsAre(3));
  EXPECT_THAT(Ints(t), ElementsAre(6, 14, 19));
}

TEST_F(BatchIoTest, AccumulatedElementCountWithZero) {
  BatchInputTensor t = One(BatchInputKind::kAccumulatedElementCountWithZero);
  EXPECT_THAT(t.shape, ElementsAre(4));
  EXPECT_THAT(Ints(t), ElementsAre(0, 6, 14, 19));
}

TEST_F(BatchIoTest, MaxElementCountAsShape) {
  BatchInputTensor t = One(BatchInputKind::kMaxElementCountAsShape);
  EXPECT_THAT(t.shape, ElementsAre(8));
  EXPECT_EQ(t.data.size(), 8u * 4);
}

TEST_F(BatchIoTest, ItemShapeHasOneRowPerBatchItem) {
  BatchInputTensor t = One(BatchInputKind::kItemShape);
  EXPECT_THAT(t.shape, ElementsAre(4, 2));
  EXPECT_THAT(Ints(t), ElementsAre(2, 3, 1, 4, 1, 4, 5, 1));
}

TEST_F(BatchIoTest, ItemShapeFlatten) {
  BatchInputTensor t = One(BatchInputKind::kItemShapeFlatten);
  EXPECT_THAT(t.shape, ElementsAre(8));
  EXPECT_THAT(Ints(t), ElementsAre(2, 3, 1, 4, 1, 4, 5, 1));
}

TEST_F(BatchIoTest, Fp32Values) {
  BatchInputTensor t = One(BatchInputKind::kAccumulatedElementCount, DataType::kFp32);
  std::vector<float> v(3);
  std::memcpy(v.data(), t.data.data(), 12);
  EXPECT_THAT(v, ElementsAre(6.f, 14.f, 19.f));
}

TEST_F(BatchIoTest, EveryTargetNameGetsTheTensor) {
  ModelInfo m = Model(BatchInputKind::kElementCount);
  m.batch_inputs[0].target_names = {"A", "B"};
  auto t = MakeBatchInputs(m, items_);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ((*t)[1].name, "B");
  EXPECT_THAT(Ints((*t)[1]), ElementsAre(6, 8, 5));
}

TEST_F(BatchIoTest, MissingSourceInputIsAnError) {
  ModelInfo m = Model(BatchInputKind::kElementCount);
  m.batch_inputs[0].source_input = "OTHER";
  auto t = MakeBatchInputs(m, items_);
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(),
              ::testing::HasSubstr("batch input 'T' needs input 'OTHER', which the request"));
}

TEST_F(BatchIoTest, RaggedInputIsFlat) {
  auto shape = RaggedInputShape("IN", items_);
  ASSERT_TRUE(shape.ok());
  EXPECT_THAT(*shape, ElementsAre(19));
}

TEST_F(BatchIoTest, ScatterShapeTakesEveryVariableDimFromTheSource) {
  ModelInfo m = Model(BatchInputKind::kElementCount);
  BatchOutputSpec scatter{{"OUT"}, "IN"};
  auto shape = ScatterShape(m, m.outputs[0], scatter, *items_[1]);
  ASSERT_TRUE(shape.ok());
  EXPECT_THAT(*shape, ElementsAre(2, 1, 4));
  m.outputs[0].dims = {-1, 7};
  shape = ScatterShape(m, m.outputs[0], scatter, *items_[2]);
  ASSERT_TRUE(shape.ok());
  EXPECT_THAT(*shape, ElementsAre(1, 5, 7));
  m.outputs[0].dims = {-1, -1, -1};
  EXPECT_FALSE(ScatterShape(m, m.outputs[0], scatter, *items_[2]).ok());
}

}  // namespace
}  // namespace nereid
