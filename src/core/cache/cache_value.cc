#include "core/cache/cache_value.h"

#include <cstring>
#include <limits>

namespace nereid {
namespace {

template <typename T>
void Put(std::string* out, T v) {
  char b[sizeof(T)];
  for (size_t i = 0; i < sizeof(T); ++i)
    b[i] = static_cast<char>(static_cast<uint64_t>(v) >> (8 * i));
  out->append(b, sizeof(T));
}

class Reader {
 public:
  explicit Reader(std::span<const char> bytes) : bytes_(bytes) {}
  template <typename T>
  bool Get(T* v) {
    if (bytes_.size() - pos_ < sizeof(T)) return false;
    uint64_t x = 0;
    for (size_t i = 0; i < sizeof(T); ++i) {
      x |= static_cast<uint64_t>(static_cast<unsigned char>(bytes_[pos_ + i])) << (8 * i);
    }
    pos_ += sizeof(T);
    *v = static_cast<T>(x);
    return true;
  }
  bool Bytes(uint64_t n, std::string* out) {
    if (bytes_.size() - pos_ < n) return false;
    out->assign(bytes_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool AtEnd() const { return pos_ == bytes_.size(); }
  size_t remaining() const { return bytes_.size() - pos_; }

 private:
  std::span<const char> bytes_;
  size_t pos_ = 0;
};

Status Bad(const std::string& what) { return InvalidArgument("malformed cache value: " + what); }

}  // namespace

std::string EncodeCacheValue(const std::string& key, const std::vector<InferOutput>& outputs,
                             const std::vector<std::span<const char>>& data) {
  size_t size = 1 + 8 + key.size() + 4;
  for (size_t i = 0; i < outputs.size(); ++i) {
    size += 4 + outputs[i].name.size() + 1 + 4 + 8 * outputs[i].shape.size() + 8 + data[i].size();
  }
  std::string out;
  out.reserve(size);
  Put<uint8_t>(&out, kCacheValueVersion);
  Put<uint64_t>(&out, key.size());
  out.append(key);
  Put<uint32_t>(&out, static_cast<uint32_t>(outputs.size()));
  for (size_t i = 0; i < outputs.size(); ++i) {
    const InferOutput& o = outputs[i];
    Put<uint32_t>(&out, static_cast<uint32_t>(o.name.size()));
    out.append(o.name);
    Put<uint8_t>(&out, static_cast<uint8_t>(o.data_type));
    Put<uint32_t>(&out, static_cast<uint32_t>(o.shape.size()));
    for (int64_t d : o.shape) Put<uint64_t>(&out, static_cast<uint64_t>(d));
    Put<uint64_t>(&out, data[i].size());
    out.append(data[i].data(), data[i].size());
  }
  return out;
}

StatusOr<CacheValue> DecodeCacheValue(std::span<const char> bytes) {
  Reader r(bytes);
  uint8_t version = 0;
  if (!r.Get(&version)) return Bad("empty");
  if (version != kCacheValueVersion) return Bad("unknown version " + std::to_string(version));
  CacheValue v;
  uint64_t key_len = 0;
  if (!r.Get(&key_len) || !r.Bytes(key_len, &v.key)) return Bad("truncated key");
  uint32_t count = 0;
  if (!r.Get(&count)) return Bad("truncated output count");
  // Each output takes at least 17 bytes: a count beyond that is a lie, not a reason to allocate.
  if (count > r.remaining() / 17) return Bad("output count exceeds the value");
  v.outputs.resize(count);
  for (InferOutput& o : v.outputs) {
    uint32_t name_len = 0;
    if (!r.Get(&name_len) || !r.Bytes(name_len, &o.name)) return Bad("truncated output name");
    uint8_t dtype = 0;
    if (!r.Get(&dtype)) return Bad("truncated datatype");
    o.data_type = static_cast<DataType>(dtype);
    if (DataTypeWireName(o.data_type) == "INVALID") {
      return Bad("unknown datatype " + std::to_string(dtype));
    }
    uint32_t dims = 0;
    if (!r.Get(&dims)) return Bad("truncated shape");
    if (dims > r.remaining() / 8) return Bad("shape exceeds the value");
    o.shape.resize(dims);
    for (int64_t& d : o.shape) {
      uint64_t x = 0;
      r.Get(&x);
      d = static_cast<int64_t>(x);
      if (d < 0) return Bad("negative dimension");
    }
    uint64_t data_len = 0;
    if (!r.Get(&data_len) || !r.Bytes(data_len, &o.data)) return Bad("truncated output data");
  }
  if (!r.AtEnd()) return Bad("trailing bytes");
  return v;
}

}  // namespace nereid
