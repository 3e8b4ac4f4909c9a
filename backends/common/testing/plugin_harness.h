// Test-only helpers for backend plugin tests: load a plugin with dlopen the way the core does,
// and an OutputAllocator that records what a backend writes. Not thread-safe.
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "nereid/backend_api.h"

namespace nereid::backends::testing {

// A dlopened plugin. The library stays loaded for the life of the process (the core may keep
// plugin objects in static storage of tests); Create() may be called more than once.
class Plugin {
 public:
  explicit Plugin(const std::string& path) {
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
      error_ = dlerror();
      return;
    }
    version_ =
        reinterpret_cast<NereidBackendApiVersionFn>(dlsym(handle_, "NereidBackendApiVersion"));
    create_ = reinterpret_cast<NereidBackendCreateFn>(dlsym(handle_, "NereidBackendCreate"));
    if (version_ == nullptr || create_ == nullptr) error_ = "missing entry point";
  }

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  uint32_t ApiVersion() const { return version_(); }
  void* handle() const { return handle_; }

  std::unique_ptr<backend::Backend> Create(const backend::BackendOptions& options,
                                           std::string* error) const {
    return std::unique_ptr<backend::Backend>(create_(&options, error));
  }

 private:
  void* handle_ = nullptr;
  NereidBackendApiVersionFn version_ = nullptr;
  NereidBackendCreateFn create_ = nullptr;
  std::string error_;
};

// Records outputs. `requested` empty means every output is requested.
class RecordingAllocator final : public backend::OutputAllocator {
 public:
  struct Output {
    DataType data_type = DataType::kInvalid;
    std::vector<int64_t> shape;
    std::vector<char> data;
  };

  explicit RecordingAllocator(std::set<std::string, std::less<>> requested = {})
      : requested_(std::move(requested)) {}

  bool IsRequested(std::string_view name) const override {
    return requested_.empty() || requested_.contains(name);
  }

  StatusOr<std::span<char>> Allocate(std::string_view name, DataType data_type,
                                     std::span<const int64_t> shape, size_t byte_size) override {
    auto [it, inserted] = outputs.try_emplace(std::string(name));
    if (!inserted) return Internal("output '" + std::string(name) + "' allocated twice");
    it->second.data_type = data_type;
    it->second.shape.assign(shape.begin(), shape.end());
    it->second.data.resize(byte_size);
    return std::span<char>(it->second.data);
  }

  std::map<std::string, Output> outputs;

 private:
  std::set<std::string, std::less<>> requested_;
};

// The BYTES encoding of `elements` (4-byte little-endian length + bytes each).
inline std::vector<char> EncodeBytes(const std::vector<std::string>& elements) {
  std::vector<char> out;
  for (const std::string& e : elements) {
    const auto n = static_cast<uint32_t>(e.size());
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
    out.insert(out.end(), e.begin(), e.end());
  }
  return out;
}

// Raw bytes of a vector of trivially copyable values.
template <typename T>
std::vector<char> RawBytes(const std::vector<T>& values) {
  std::vector<char> out(values.size() * sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

template <typename T>
std::vector<T> FromRaw(const std::vector<char>& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

}  // namespace nereid::backends::testing
