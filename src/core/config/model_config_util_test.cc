#include "core/config/model_config_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace nereid::config {
namespace {

using ::testing::ElementsAre;

TEST(DataTypeConversionTest, EveryTypeRoundTripsWithTheSameName) {
  for (DataType t : kAllDataTypes) {
    inference::DataType proto = ToProto(t);
    EXPECT_EQ(inference::DataType_Name(proto), DataTypeConfigName(t));
    EXPECT_EQ(ToDataType(proto), t);
  }
}

TEST(DataTypeConversionTest, InvalidValues) {
  EXPECT_EQ(ToDataType(inference::TYPE_INVALID), DataType::kInvalid);
  EXPECT_EQ(ToDataType(static_cast<inference::DataType>(99)), DataType::kInvalid);
  EXPECT_EQ(ToDataType(static_cast<inference::DataType>(-1)), DataType::kInvalid);
  EXPECT_EQ(ToProto(DataType::kInvalid), inference::TYPE_INVALID);
  EXPECT_EQ(ToProto(static_cast<DataType>(200)), inference::TYPE_INVALID);
}

TEST(FullShapeTest, PrependsBatchDimensionWhenBatching) {
  inference::ModelConfig config;
  config.set_max_batch_size(8);
  inference::ModelInput input;
  input.add_dims(16);
  input.add_dims(-1);
  EXPECT_THAT(FullShape(config, input.dims()), ElementsAre(-1, 16, -1));
}

TEST(FullShapeTest, DimsUnchangedWithoutBatching) {
  inference::ModelConfig config;
  const int64_t dims[] = {4};
  EXPECT_THAT(FullShape(config, dims), ElementsAre(4));
}

}  // namespace
}  // namespace nereid::config
