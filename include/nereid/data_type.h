// Tensor datatypes: one enum numbered as `inference.DataType` in model_config.proto, with the
// names each protocol uses. Header-only; shared by the core and the backend plugins.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace nereid {

enum class DataType : unsigned char {
  kInvalid = 0,
  kBool = 1,
  kUint8 = 2,
  kUint16 = 3,
  kUint32 = 4,
  kUint64 = 5,
  kInt8 = 6,
  kInt16 = 7,
  kInt32 = 8,
  kInt64 = 9,
  kFp16 = 10,
  kFp32 = 11,
  kFp64 = 12,
  kBytes = 13,  // TYPE_STRING in config.pbtxt, "BYTES" on the wire
  kBf16 = 14,
};

inline constexpr DataType kAllDataTypes[] = {
    DataType::kBool,  DataType::kUint8, DataType::kUint16, DataType::kUint32, DataType::kUint64,
    DataType::kInt8,  DataType::kInt16, DataType::kInt32,  DataType::kInt64,  DataType::kFp16,
    DataType::kFp32,  DataType::kFp64,  DataType::kBytes,  DataType::kBf16};

// Bytes per element; 0 for BYTES (variable) and INVALID.
constexpr size_t DataTypeByteSize(DataType t) {
  switch (t) {
    case DataType::kBool:
    case DataType::kUint8:
    case DataType::kInt8: return 1;
    case DataType::kUint16:
    case DataType::kInt16:
    case DataType::kFp16:
    case DataType::kBf16: return 2;
    case DataType::kUint32:
    case DataType::kInt32:
    case DataType::kFp32: return 4;
    case DataType::kUint64:
    case DataType::kInt64:
    case DataType::kFp64: return 8;
    case DataType::kBytes:
    case DataType::kInvalid: return 0;
  }
  return 0;
}

// KServe v2 wire name: "BOOL", "UINT8", ..., "FP32", "BYTES", "BF16".
constexpr std::string_view DataTypeWireName(DataType t) {
  switch (t) {
    case DataType::kBool: return "BOOL";
    case DataType::kUint8: return "UINT8";
    case DataType::kUint16: return "UINT16";
    case DataType::kUint32: return "UINT32";
    case DataType::kUint64: return "UINT64";
    case DataType::kInt8: return "INT8";
    case DataType::kInt16: return "INT16";
    case DataType::kInt32: return "INT32";
    case DataType::kInt64: return "INT64";
    case DataType::kFp16: return "FP16";
    case DataType::kFp32: return "FP32";
    case DataType::kFp64: return "FP64";
    case DataType::kBytes: return "BYTES";
    case DataType::kBf16: return "BF16";
    case DataType::kInvalid: return "INVALID";
  }
  return "INVALID";
}

// config.pbtxt name: "TYPE_FP32", "TYPE_STRING", ...
constexpr std::string_view DataTypeConfigName(DataType t) {
  switch (t) {
    case DataType::kBool: return "TYPE_BOOL";
    case DataType::kUint8: return "TYPE_UINT8";
    case DataType::kUint16: return "TYPE_UINT16";
    case DataType::kUint32: return "TYPE_UINT32";
    case DataType::kUint64: return "TYPE_UINT64";
    case DataType::kInt8: return "TYPE_INT8";
    case DataType::kInt16: return "TYPE_INT16";
    case DataType::kInt32: return "TYPE_INT32";
    case DataType::kInt64: return "TYPE_INT64";
    case DataType::kFp16: return "TYPE_FP16";
    case DataType::kFp32: return "TYPE_FP32";
    case DataType::kFp64: return "TYPE_FP64";
    case DataType::kBytes: return "TYPE_STRING";
    case DataType::kBf16: return "TYPE_BF16";
    case DataType::kInvalid: return "TYPE_INVALID";
  }
  return "TYPE_INVALID";
}

constexpr std::optional<DataType> DataTypeFromWireName(std::string_view name) {
  for (DataType t : kAllDataTypes) {
    if (DataTypeWireName(t) == name) return t;
  }
  return std::nullopt;
}

constexpr std::optional<DataType> DataTypeFromConfigName(std::string_view name) {
  for (DataType t : kAllDataTypes) {
    if (DataTypeConfigName(t) == name) return t;
  }
  return std::nullopt;
}

}  // namespace nereid
