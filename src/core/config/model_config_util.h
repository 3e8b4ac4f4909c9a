// Small conversions the frontends and the model layer use on a model configuration.
#pragma once

#include <cstdint>
#include <span>

#include "core/tensor/shape.h"
#include "model_config.pb.h"
#include "nereid/data_type.h"

namespace nereid::config {

// Same numbering on both sides; values outside the enum map to the invalid type.
DataType ToDataType(inference::DataType type);
inference::DataType ToProto(DataType type);

// The shape clients see (metadata, request checks): [-1] + dims when max_batch_size > 0, else
// dims.
Shape FullShape(const inference::ModelConfig& config, std::span<const int64_t> dims);
Shape FullShape(const inference::ModelConfig& config,
                const google::protobuf::RepeatedField<int64_t>& dims);

}  // namespace nereid::config
