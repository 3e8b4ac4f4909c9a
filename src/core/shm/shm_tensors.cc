#include "core/shm/shm_tensors.h"

#include <cstring>
#include <optional>

#include "common/error_text.h"

namespace nereid {
namespace {

constexpr char kRegion[] = "shared_memory_region";
constexpr char kOffset[] = "shared_memory_offset";
constexpr char kByteSize[] = "shared_memory_byte_size";

struct ShmParams {
  std::string region;
  uint64_t offset = 0;
  uint64_t byte_size = 0;
};

std::optional<uint64_t> AsUnsigned(const ParameterValue& v) {
  if (const uint64_t* u = std::get_if<uint64_t>(&v)) return *u;
  if (const int64_t* i = std::get_if<int64_t>(&v)) return static_cast<uint64_t>(*i);
  return std::nullopt;
}

Status BadType(const char* key, const std::string& tensor, const char* expected) {
  return InvalidArgument(std::string("invalid value type for '") + key +
                         "' parameter for tensor '" + ClientText(tensor) + "', expected " +
                         expected + ".");
}

// nullopt when the tensor does not use shared memory. Texts: Triton's ParseSharedMemoryParams.
StatusOr<std::optional<ShmParams>> ParseShmParams(const Parameters& p, const std::string& tensor) {
  const ParameterValue* region = p.Find(kRegion);
  const ParameterValue* offset = p.Find(kOffset);
  const ParameterValue* size = p.Find(kByteSize);
  if (region == nullptr) {
    for (const auto& [key, value] : {std::pair{kOffset, offset}, std::pair{kByteSize, size}}) {
      if (value != nullptr) {
        return InvalidArgument(std::string("'") + key +
                               "' can not be specified without 'shared_memory_region' parameter "
                               "for tensor '" +
                               ClientText(tensor) + "'");
      }
    }
    return std::optional<ShmParams>();
  }
  ShmParams out;
  const std::string* name = std::get_if<std::string>(region);
  if (name == nullptr) return BadType(kRegion, tensor, "string_param");
  out.region = *name;
  if (offset != nullptr) {
    std::optional<uint64_t> v = AsUnsigned(*offset);
    if (!v) return BadType(kOffset, tensor, "int64_param");
    out.offset = *v;
  }
  if (size == nullptr) {
    return InvalidArgument(
        "'shared_memory_byte_size' must be specified along with 'shared_memory_region' parameter "
        "for tensor '" +
        ClientText(tensor) + "'");
  }
  std::optional<uint64_t> v = AsUnsigned(*size);
  if (!v) return BadType(kByteSize, tensor, "int64_param");
  out.byte_size = *v;
  return std::optional<ShmParams>(std::move(out));
}

}  // namespace

StatusOr<ShmOutputTargets> ResolveShmTensors(const SharedMemoryManager& manager,
                                             InferenceRequest* request) {
  ShmOutputTargets targets;
  for (InferInput& in : request->inputs) {
    NEREID_ASSIGN_OR_RETURN(std::optional<ShmParams> shm, ParseShmParams(in.parameters, in.name));
    if (!shm) continue;
    NEREID_ASSIGN_OR_RETURN(std::shared_ptr<ShmSlice> slice,
                            manager.Acquire(shm->region, shm->offset, shm->byte_size));
    const std::span<char> bytes = slice->data();
    in.data = std::span<const char>(bytes.data(), bytes.size());
    in.parameters.Remove(kRegion);
    in.parameters.Remove(kOffset);
    in.parameters.Remove(kByteSize);
    request->KeepAlive(std::move(slice));
  }
  for (RequestedOutput& out : request->outputs) {
    NEREID_ASSIGN_OR_RETURN(std::optional<ShmParams> shm, ParseShmParams(out.parameters, out.name));
    if (!shm) continue;
    NEREID_ASSIGN_OR_RETURN(std::shared_ptr<ShmSlice> slice,
                            manager.Acquire(shm->region, shm->offset, shm->byte_size));
    out.shared_memory = slice->data();
    request->KeepAlive(slice);  // the backend may write there (instance_runner.cc)
    targets.outputs.emplace_back(out.name, std::move(slice));
  }
  return targets;
}

Status WriteShmOutputs(const ShmOutputTargets& targets, InferenceResponse* response) {
  for (const auto& [name, slice] : targets.outputs) {
    for (InferOutput& out : response->outputs) {
      if (out.name != name || out.in_shared_memory) continue;
      const std::span<char> dst = slice->data();
      if (out.data.size() > dst.size()) {
        return OutputRegionTooSmall(name, dst.size(), out.data.size());
      }
      std::memcpy(dst.data(), out.data.data(), out.data.size());
      out.in_shared_memory = true;
      std::string().swap(out.data);
    }
  }
  return Status::Ok();
}

Status OutputRegionTooSmall(std::string_view name, size_t have, size_t need) {
  return Internal("shared memory size specified with the request for output '" + ClientText(name) +
                  "' (" + std::to_string(have) + " bytes) should be at least " +
                  std::to_string(need) + " bytes to hold the results");
}

}  // namespace nereid
