#include "core/shm/shm_tensors.h"

#include <gtest/gtest.h>

#include "core/shm/shm_test_object.h"

namespace nereid {
namespace {

class ShmTensorsTest : public testing::Test {
 protected:
  void SetUp() override {
    obj_.Write(0, "0123456789abcdef");
    ASSERT_TRUE(manager_.RegisterSystem("r", obj_.key(), 0, 64).ok());
  }

  static InferInput Input(Parameters p) {
    InferInput in;
    in.name = "INPUT0";
    in.data_type = DataType::kUint8;
    in.shape = {4};
    in.parameters = std::move(p);
    return in;
  }
  static Parameters Shm(const std::string& region, ParameterValue offset, ParameterValue size) {
    Parameters p;
    p.Set("shared_memory_region", region);
    p.Set("shared_memory_offset", offset);
    p.Set("shared_memory_byte_size", size);
    return p;
  }

  TestShmObject obj_{64};
  SharedMemoryManager manager_{{.allow_client_shm = true}};
};

TEST_F(ShmTensorsTest, InputIsAViewIntoTheMapping) {
  InferenceRequest r;
  r.inputs.push_back(Input(Shm("r", int64_t{4}, uint64_t{4})));
  Parameters other;
  other.Set("keep", true);
  r.inputs.push_back(Input(other));
  auto targets = ResolveShmTensors(manager_, &r);
  ASSERT_TRUE(targets.ok()) << targets.status().message();
  EXPECT_TRUE(targets->empty());
  EXPECT_EQ(std::string(r.inputs[0].data.data(), r.inputs[0].data.size()), "4567");
  EXPECT_TRUE(r.inputs[0].parameters.empty());
  EXPECT_EQ(r.inputs[1].parameters.size(), 1u);
  // No copy: a write to the object is seen through the request's view.
  obj_.Write(4, "WXYZ");
  EXPECT_EQ(std::string(r.inputs[0].data.data(), 4), "WXYZ");
}

TEST_F(ShmTensorsTest, RequestHoldsTheRegion) {
  auto r = std::make_unique<InferenceRequest>();
  r->inputs.push_back(Input(Shm("r", int64_t{0}, int64_t{4})));
  ASSERT_TRUE(ResolveShmTensors(manager_, r.get()).ok());
  ASSERT_TRUE(manager_.UnregisterSystem("r").ok());
  EXPECT_EQ(manager_.SystemStatus("r")->size(), 1u);
  r.reset();
  EXPECT_FALSE(manager_.SystemStatus("r").ok());
}

TEST_F(ShmTensorsTest, ParameterErrors) {
  auto error = [&](Parameters p) {
    InferenceRequest r;
    r.inputs.push_back(Input(std::move(p)));
    return ResolveShmTensors(manager_, &r).status().message();
  };
  Parameters no_size;
  no_size.Set("shared_memory_region", std::string("r"));
  EXPECT_EQ(error(no_size),
            "'shared_memory_byte_size' must be specified along with 'shared_memory_region' "
            "parameter for tensor 'INPUT0'");
  Parameters no_region;
  no_region.Set("shared_memory_offset", int64_t{0});
  EXPECT_EQ(error(no_region),
            "'shared_memory_offset' can not be specified without 'shared_memory_region' "
            "parameter for tensor 'INPUT0'");
  EXPECT_EQ(error(Shm("r", std::string("x"), int64_t{4})),
            "invalid value type for 'shared_memory_offset' parameter for tensor 'INPUT0', "
            "expected int64_param.");
  EXPECT_EQ(error(Shm("r", int64_t{0}, 1.5)),
            "invalid value type for 'shared_memory_byte_size' parameter for tensor 'INPUT0', "
            "expected int64_param.");
  Parameters bad_region = Shm("r", int64_t{0}, int64_t{4});
  bad_region.Set("shared_memory_region", int64_t{3});
  EXPECT_EQ(error(bad_region),
            "invalid value type for 'shared_memory_region' parameter for tensor 'INPUT0', "
            "expected string_param.");
  // Negative values are the unsigned numbers they encode, refused by the bounds checks.
  EXPECT_EQ(error(Shm("r", int64_t{-1}, int64_t{4})),
            "Invalid offset for shared memory region: 'r'");
  EXPECT_EQ(error(Shm("r", int64_t{0}, int64_t{-1})),
            "Invalid offset + byte size for shared memory region: 'r'");
  EXPECT_EQ(error(Shm("nope", int64_t{0}, int64_t{4})),
            "Unable to find shared memory region: 'nope'");
}

TEST_F(ShmTensorsTest, OutputsAreWrittenIntoTheirRange) {
  InferenceRequest r;
  RequestedOutput o;
  o.name = "OUT";
  o.parameters = Shm("r", int64_t{32}, int64_t{8});
  r.outputs.push_back(o);
  auto targets = ResolveShmTensors(manager_, &r);
  ASSERT_TRUE(targets.ok());
  ASSERT_EQ(targets->outputs.size(), 1u);
  InferenceResponse response;
  response.outputs.push_back({"OUT", DataType::kUint8, {4}, "ABCD"});
  response.outputs.push_back({"OTHER", DataType::kUint8, {1}, "z"});
  ASSERT_TRUE(WriteShmOutputs(*targets, &response).ok());
  EXPECT_TRUE(response.outputs[0].in_shared_memory);
  EXPECT_TRUE(response.outputs[0].data.empty());
  EXPECT_FALSE(response.outputs[1].in_shared_memory);
  EXPECT_EQ(obj_.Read(32, 4), "ABCD");
}

TEST_F(ShmTensorsTest, OutputRegionTooSmall) {
  InferenceRequest r;
  RequestedOutput o;
  o.name = "OUT";
  o.parameters = Shm("r", int64_t{60}, int64_t{4});
  r.outputs.push_back(o);
  auto targets = ResolveShmTensors(manager_, &r);
  ASSERT_TRUE(targets.ok());
  InferenceResponse response;
  response.outputs.push_back({"OUT", DataType::kUint8, {8}, "ABCDEFGH"});
  Status s = WriteShmOutputs(*targets, &response);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_EQ(s.message(),
            "shared memory size specified with the request for output 'OUT' (4 bytes) should be "
            "at least 8 bytes to hold the results");
  EXPECT_EQ(obj_.Read(60, 4), std::string(4, '\0'));
}

}  // namespace
}  // namespace nereid
