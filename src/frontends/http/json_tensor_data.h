// Tensor data <-> JSON scalars, in both directions, for the KServe v2 `data` arrays.
// Binary layout is the host's (little-endian on every supported target), row-major; BOOL is one
// byte 0/1; BYTES elements are 4-byte little-endian length + bytes. Not thread-safe per object.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "frontends/http/json_writer.h"
#include "nereid/data_type.h"
#include "nereid/status.h"

namespace nereid {

// Appends JSON scalars to `out` in `type`'s layout, checking each value fits: integers are range
// checked (no silent truncation), BOOL takes only true/false, BYTES only strings, floating types
// any number that they can hold without overflowing to infinity (FP16/BF16 are converted from the
// number, which Triton refuses; see the ADR).
// Errors are InvalidArgument with a short reason; the caller names the input.
class JsonTensorAppender {
 public:
  JsonTensorAppender(DataType type, std::string* out) : type_(type), out_(out) {}

  Status AppendBool(bool v);
  Status AppendInt(int64_t v);
  Status AppendUint(uint64_t v);
  Status AppendDouble(double v);
  Status AppendString(std::string_view v);

  int64_t count() const { return count_; }
  DataType type() const { return type_; }

 private:
  template <typename T>
  void Put(T v) {
    out_->append(reinterpret_cast<const char*>(&v), sizeof(T));
    ++count_;
  }
  Status PutSigned(int64_t v);
  Status PutUnsigned(uint64_t v);
  Status Mismatch(std::string_view got) const;

  DataType type_;
  std::string* out_;
  int64_t count_ = 0;
};

// Writes `element_count` elements of `data` as one flat JSON array: integers as integers, BOOL as
// true/false, floating types (FP16/BF16 widened) as numbers with NaN/Infinity, BYTES as strings.
// Returns Internal when the data size does not match the element count (the message names
// `name`), in which case the writer holds a partial document.
Status WriteTensorJson(DataType type, std::span<const char> data, int64_t element_count,
                       const std::string& name, JsonWriter& w);

}  // namespace nereid
