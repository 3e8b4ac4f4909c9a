#include "core/trace/trace_json.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace nereid::trace {
namespace {

TEST(TraceJsonTest, StartAndTimestamp) {
  EXPECT_EQ(StartRecord(3, "simple", 1, "", 0),
            R"({"id":3,"model_name":"simple","model_version":1})");
  EXPECT_EQ(StartRecord(4, "m\"x", 2, "r1", 3),
            R"({"id":4,"model_name":"m\"x","model_version":2,"request_id":"r1","parent_id":3})");
  EXPECT_EQ(TimestampRecord(3, "QUEUE_START", 42),
            R"({"id":3,"timestamps":[{"name":"QUEUE_START","ns":42}]})");
}

TEST(TraceJsonTest, Tensors) {
  const float f[] = {0.5f, 2.0f};
  const int64_t shape[] = {1, 2};
  EXPECT_EQ(TensorRecord(1, "TENSOR_QUEUE_INPUT", "IN", DataType::kFp32, shape,
                         {reinterpret_cast<const char*>(f), sizeof(f)}),
            R"({"id":1,"activity":"TENSOR_QUEUE_INPUT","tensor":{"name":"IN","data":"0.5,2",)"
            R"("shape":"1,2","dtype":"FP32"}})");
  std::vector<char> bytes(4 + 2);
  const uint32_t len = 2;
  std::memcpy(bytes.data(), &len, 4);
  std::memcpy(bytes.data() + 4, "hi", 2);
  const int64_t one[] = {1};
  EXPECT_EQ(TensorRecord(1, "TENSOR_BACKEND_OUTPUT", "S", DataType::kBytes, one, bytes),
            R"({"id":1,"activity":"TENSOR_BACKEND_OUTPUT","tensor":{"name":"S",)"
            R"("data":"\"hi\"","shape":"1","dtype":"BYTES"}})");
  // A truncated BYTES element and short numeric data print what is there, never past the end.
  const int64_t three[] = {3};
  EXPECT_EQ(
      TensorRecord(1, "A", "S", DataType::kBytes, three, {bytes.data(), 5}),
      R"({"id":1,"activity":"A","tensor":{"name":"S","data":"","shape":"3","dtype":"BYTES"}})");
  EXPECT_EQ(
      TensorRecord(1, "A", "F", DataType::kFp32, three,
                   {reinterpret_cast<const char*>(f), sizeof(f)}),
      R"({"id":1,"activity":"A","tensor":{"name":"F","data":"0.5,2","shape":"3","dtype":"FP32"}})");
  const int8_t i8[] = {-1, 65};
  EXPECT_EQ(
      TensorRecord(1, "A", "I", DataType::kInt8, shape,
                   {reinterpret_cast<const char*>(i8), sizeof(i8)}),
      R"({"id":1,"activity":"A","tensor":{"name":"I","data":"-1,65","shape":"1,2","dtype":"INT8"}})");
}

}  // namespace
}  // namespace nereid::trace
