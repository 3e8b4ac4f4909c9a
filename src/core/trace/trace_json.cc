#include "core/trace/trace_json.h"

#include <cstring>
#include <sstream>

namespace nereid::trace {
namespace {

void AppendEscaped(std::string* out, std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      *out += '\\';
      *out += static_cast<char>(c);
    } else if (c < 0x20) {
      *out += "\\u00";
      *out += kHex[c >> 4];
      *out += kHex[c & 15];
    } else {
      *out += static_cast<char>(c);
    }
  }
}

template <typename T, typename Print = T>
void PrintElements(std::ostringstream& os, std::span<const char> data, size_t count) {
  const size_t n = std::min(count, data.size() / sizeof(T));
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, data.data() + i * sizeof(T), sizeof(T));
    if (i > 0) os << ',';
    os << static_cast<Print>(v);
  }
}

std::string TensorData(DataType type, size_t count, std::span<const char> data) {
  std::ostringstream os;
  switch (type) {
    case DataType::kBool: {
      const size_t n = std::min(count, data.size());
      for (size_t i = 0; i < n; ++i) os << (i > 0 ? "," : "") << (data[i] != 0 ? 1 : 0);
      break;
    }
    case DataType::kUint8:
      PrintElements<uint8_t, unsigned>(os, data, count);
      break;
    case DataType::kUint16:
      PrintElements<uint16_t>(os, data, count);
      break;
    case DataType::kUint32:
      PrintElements<uint32_t>(os, data, count);
      break;
    case DataType::kUint64:
      PrintElements<uint64_t>(os, data, count);
      break;
    case DataType::kInt8:
      PrintElements<int8_t, int>(os, data, count);
      break;
    case DataType::kInt16:
      PrintElements<int16_t>(os, data, count);
      break;
    case DataType::kInt32:
      PrintElements<int32_t>(os, data, count);
      break;
    case DataType::kInt64:
      PrintElements<int64_t>(os, data, count);
      break;
    case DataType::kFp32:
      PrintElements<float>(os, data, count);
      break;
    case DataType::kFp64:
      PrintElements<double>(os, data, count);
      break;
    case DataType::kBytes: {
      size_t offset = 0;
      for (size_t i = 0; i < count; ++i) {
        uint32_t len = 0;
        if (offset + sizeof(len) > data.size()) break;
        std::memcpy(&len, data.data() + offset, sizeof(len));
        offset += sizeof(len);
        if (len > data.size() - offset) break;
        if (i > 0) os << ',';
        os << '"' << std::string_view(data.data() + offset, len) << '"';
        offset += len;
      }
      break;
    }
    case DataType::kFp16:
    case DataType::kBf16:
    case DataType::kInvalid:
      break;
  }
  return os.str();
}

}  // namespace

std::string StartRecord(uint64_t id, std::string_view model_name, int64_t model_version,
                        std::string_view request_id, uint64_t parent_id) {
  std::string out = "{\"id\":" + std::to_string(id) + ",\"model_name\":\"";
  AppendEscaped(&out, model_name);
  out += "\",\"model_version\":" + std::to_string(model_version);
  if (!request_id.empty()) {
    out += ",\"request_id\":\"";
    AppendEscaped(&out, request_id);
    out += '"';
  }
  if (parent_id != 0) out += ",\"parent_id\":" + std::to_string(parent_id);
  out += '}';
  return out;
}

std::string TimestampRecord(uint64_t id, std::string_view name, uint64_t ns) {
  std::string out = "{\"id\":" + std::to_string(id) + ",\"timestamps\":[{\"name\":\"";
  AppendEscaped(&out, name);
  out += "\",\"ns\":" + std::to_string(ns) + "}]}";
  return out;
}

std::string TensorRecord(uint64_t id, std::string_view activity, std::string_view name,
                         DataType type, std::span<const int64_t> shape,
                         std::span<const char> data) {
  size_t count = 1;
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i) {
    count *= static_cast<size_t>(std::max<int64_t>(shape[i], 0));
    if (i > 0) dims += ',';
    dims += std::to_string(shape[i]);
  }
  std::string out = "{\"id\":" + std::to_string(id) + ",\"activity\":\"";
  AppendEscaped(&out, activity);
  out += "\",\"tensor\":{\"name\":\"";
  AppendEscaped(&out, name);
  out += "\",\"data\":\"";
  AppendEscaped(&out, TensorData(type, count, data));
  out += "\",\"shape\":\"" + dims + "\",\"dtype\":\"";
  out += DataTypeWireName(type);
  out += "\"}}";
  return out;
}

}  // namespace nereid::trace
