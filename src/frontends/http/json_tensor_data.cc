#include "frontends/http/json_tensor_data.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/tensor/bytes_tensor.h"
#include "frontends/http/float16.h"

namespace nereid {
namespace {

template <typename T>
bool FitsSigned(int64_t v) {
  return v >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
         v <= static_cast<int64_t>(std::numeric_limits<T>::max());
}

template <typename T>
bool FitsUnsigned(uint64_t v) {
  return v <= static_cast<uint64_t>(std::numeric_limits<T>::max());
}

template <typename T>
T Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

Status OutOfRange(std::string_view value, DataType type) {
  return InvalidArgument("value " + std::string(value) + " is out of range for " +
                         std::string(DataTypeWireName(type)));
}

bool IsFloating(DataType t) {
  return t == DataType::kFp16 || t == DataType::kBf16 || t == DataType::kFp32 ||
         t == DataType::kFp64;
}

// Shortest text that reads back as `v` ("1e+39").
std::string DoubleText(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

// Doubles at or beyond this magnitude round to infinity as float: it is halfway between FLT_MAX
// (2^128 - 2^104) and 2^128, and the tie goes to the even 2^128.
constexpr double kFloatOverflow = 0x1.ffffffp+127;

bool IsInfHalf(uint16_t h) { return (h & 0x7fffu) == 0x7c00u; }
bool IsInfBfloat16(uint16_t b) { return (b & 0x7fffu) == 0x7f80u; }

}  // namespace

Status JsonTensorAppender::Mismatch(std::string_view got) const {
  return InvalidArgument("expected " +
                         std::string(type_ == DataType::kBool    ? "a boolean"
                                     : type_ == DataType::kBytes ? "a string"
                                     : IsFloating(type_)         ? "a number"
                                                                 : "an integer") +
                         " for datatype " + std::string(DataTypeWireName(type_)) + ", got " +
                         std::string(got));
}

Status JsonTensorAppender::PutSigned(int64_t v) {
  switch (type_) {
    case DataType::kInt8:
      if (!FitsSigned<int8_t>(v)) return OutOfRange(std::to_string(v), type_);
      Put(static_cast<int8_t>(v));
      return Status::Ok();
    case DataType::kInt16:
      if (!FitsSigned<int16_t>(v)) return OutOfRange(std::to_string(v), type_);
      Put(static_cast<int16_t>(v));
      return Status::Ok();
    case DataType::kInt32:
      if (!FitsSigned<int32_t>(v)) return OutOfRange(std::to_string(v), type_);
      Put(static_cast<int32_t>(v));
      return Status::Ok();
    case DataType::kInt64:
      Put(v);
      return Status::Ok();
    default:
      break;
  }
  if (v < 0) return OutOfRange(std::to_string(v), type_);
  return PutUnsigned(static_cast<uint64_t>(v));
}

Status JsonTensorAppender::PutUnsigned(uint64_t v) {
  switch (type_) {
    case DataType::kUint8:
      if (!FitsUnsigned<uint8_t>(v)) return OutOfRange(std::to_string(v), type_);
      Put(static_cast<uint8_t>(v));
      return Status::Ok();
    case DataType::kUint16:
      if (!FitsUnsigned<uint16_t>(v)) return OutOfRange(std::to_string(v), type_);
      Put(static_cast<uint16_t>(v));
      return Status::Ok();
    case DataType::kUint32:
      if (!FitsUnsigned<uint32_t>(v)) return OutOfRange(std::to_string(v), type_);
      Put(static_cast<uint32_t>(v));
      return Status::Ok();
    case DataType::kUint64:
      Put(v);
      return Status::Ok();
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return OutOfRange(std::to_string(v), type_);
      }
      return PutSigned(static_cast<int64_t>(v));
    default:
      return Mismatch("a number");
  }
}

Status JsonTensorAppender::AppendBool(bool v) {
  if (type_ != DataType::kBool) return Mismatch("a boolean");
  Put(static_cast<uint8_t>(v ? 1 : 0));
  return Status::Ok();
}

Status JsonTensorAppender::AppendInt(int64_t v) {
  if (type_ == DataType::kBool || type_ == DataType::kBytes) return Mismatch("a number");
  if (type_ == DataType::kFp32 || type_ == DataType::kFp64 || type_ == DataType::kFp16 ||
      type_ == DataType::kBf16) {
    return AppendDouble(static_cast<double>(v));
  }
  return PutSigned(v);
}

Status JsonTensorAppender::AppendUint(uint64_t v) {
  if (type_ == DataType::kBool || type_ == DataType::kBytes) return Mismatch("a number");
  if (type_ == DataType::kFp32 || type_ == DataType::kFp64 || type_ == DataType::kFp16 ||
      type_ == DataType::kBf16) {
    return AppendDouble(static_cast<double>(v));
  }
  return PutUnsigned(v);
}

// A finite number that the datatype can only hold as infinity is refused as out of range; NaN and
// infinities written as such in the JSON (NaN, Infinity, -Infinity) are kept.
Status JsonTensorAppender::AppendDouble(double v) {
  if (type_ == DataType::kFp64) {
    Put(v);
    return Status::Ok();
  }
  if (!IsFloating(type_)) return Mismatch("a floating-point number");
  const bool finite = std::isfinite(v);
  if (finite && std::fabs(v) >= kFloatOverflow) return OutOfRange(DoubleText(v), type_);
  const float f = static_cast<float>(v);
  switch (type_) {
    case DataType::kFp32:
      Put(f);
      return Status::Ok();
    case DataType::kFp16: {
      const uint16_t h = FloatToHalf(f);
      if (finite && IsInfHalf(h)) return OutOfRange(DoubleText(v), type_);
      Put(h);
      return Status::Ok();
    }
    default: {  // kBf16
      const uint16_t b = FloatToBfloat16(f);
      if (finite && IsInfBfloat16(b)) return OutOfRange(DoubleText(v), type_);
      Put(b);
      return Status::Ok();
    }
  }
}

Status JsonTensorAppender::AppendString(std::string_view v) {
  if (type_ != DataType::kBytes) return Mismatch("a string");
  if (v.size() > std::numeric_limits<uint32_t>::max()) return InvalidArgument("string too long");
  AppendBytesElement(v, out_);
  ++count_;
  return Status::Ok();
}

namespace {

template <typename T, typename Fn>
void WriteEach(std::span<const char> data, int64_t n, Fn&& fn) {
  for (int64_t i = 0; i < n; ++i) fn(Load<T>(data.data() + i * sizeof(T)));
}

Status WriteBytesJson(std::span<const char> data, int64_t element_count, const std::string& name,
                      JsonWriter& w) {
  int64_t n = 0;
  Status s = ForEachBytesElement(data, [&](std::string_view e) {
    if (n++ < element_count) WriteJsonString(w, e);
  });
  if (!s.ok() || n != element_count) {
    return Internal("output tensor shape does not match size of output for '" + name + "'");
  }
  return Status::Ok();
}

}  // namespace

Status WriteTensorJson(DataType type, std::span<const char> data, int64_t element_count,
                       const std::string& name, JsonWriter& w) {
  w.StartArray();
  if (type == DataType::kBytes) {
    NEREID_RETURN_IF_ERROR(WriteBytesJson(data, element_count, name, w));
    w.EndArray();
    return Status::Ok();
  }
  const size_t elem = DataTypeByteSize(type);
  if (elem == 0 || element_count < 0 || data.size() != static_cast<size_t>(element_count) * elem) {
    return Internal("output tensor shape does not match size of output for '" + name + "'");
  }
  const int64_t n = element_count;
  switch (type) {
    case DataType::kBool:
      WriteEach<uint8_t>(data, n, [&](uint8_t v) { w.Bool(v != 0); });
      break;
    case DataType::kUint8:
      WriteEach<uint8_t>(data, n, [&](uint8_t v) { w.Uint(v); });
      break;
    case DataType::kUint16:
      WriteEach<uint16_t>(data, n, [&](uint16_t v) { w.Uint(v); });
      break;
    case DataType::kUint32:
      WriteEach<uint32_t>(data, n, [&](uint32_t v) { w.Uint(v); });
      break;
    case DataType::kUint64:
      WriteEach<uint64_t>(data, n, [&](uint64_t v) { w.Uint64(v); });
      break;
    case DataType::kInt8:
      WriteEach<int8_t>(data, n, [&](int8_t v) { w.Int(v); });
      break;
    case DataType::kInt16:
      WriteEach<int16_t>(data, n, [&](int16_t v) { w.Int(v); });
      break;
    case DataType::kInt32:
      WriteEach<int32_t>(data, n, [&](int32_t v) { w.Int(v); });
      break;
    case DataType::kInt64:
      WriteEach<int64_t>(data, n, [&](int64_t v) { w.Int64(v); });
      break;
    case DataType::kFp16:
      WriteEach<uint16_t>(data, n, [&](uint16_t v) { w.Double(HalfToFloat(v)); });
      break;
    case DataType::kBf16:
      WriteEach<uint16_t>(data, n, [&](uint16_t v) { w.Double(Bfloat16ToFloat(v)); });
      break;
    case DataType::kFp32:
      WriteEach<float>(data, n, [&](float v) { w.Double(v); });
      break;
    case DataType::kFp64:
      WriteEach<double>(data, n, [&](double v) { w.Double(v); });
      break;
    case DataType::kBytes:
    case DataType::kInvalid:
      return Internal("invalid datatype for output '" + name + "'");
  }
  w.EndArray();
  return Status::Ok();
}

}  // namespace nereid
