#include "core/config/model_config_util.h"

namespace nereid::config {

DataType ToDataType(inference::DataType type) {
  if (type <= inference::TYPE_INVALID || type > inference::TYPE_BF16) return DataType::kInvalid;
  return static_cast<DataType>(type);
}

inference::DataType ToProto(DataType type) {
  const auto value = static_cast<int>(type);
  if (value > inference::TYPE_BF16) return inference::TYPE_INVALID;
  return static_cast<inference::DataType>(value);
}

Shape FullShape(const inference::ModelConfig& config, std::span<const int64_t> dims) {
  Shape shape;
  shape.reserve(dims.size() + 1);
  if (config.max_batch_size() > 0) shape.push_back(-1);
  shape.insert(shape.end(), dims.begin(), dims.end());
  return shape;
}

Shape FullShape(const inference::ModelConfig& config,
                const google::protobuf::RepeatedField<int64_t>& dims) {
  return FullShape(config, std::span<const int64_t>(dims.data(), dims.size()));
}

}  // namespace nereid::config
