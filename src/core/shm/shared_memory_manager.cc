#include "core/shm/shared_memory_manager.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <map>

#include "common/error_text.h"
#include "common/thread_annotations.h"

namespace nereid {
namespace {

// One mapping. The descriptor stays open so every use can fstat the object (truncation check);
// both are released with the last reference (the registry's or a slice's).
struct Region {
  std::string name;
  std::string key;
  uint64_t offset = 0;  // into the shm object; applied once, by mmap
  uint64_t byte_size = 0;
  int fd = -1;
  char* base = nullptr;  // the mapping: byte 0 is the object's byte `offset`

  ~Region() {
    if (base != nullptr) munmap(base, byte_size);
    if (fd >= 0) close(fd);
  }
};

struct Entry {
  std::shared_ptr<Region> region;
  int users = 0;                     // slices alive
  bool awaiting_unregister = false;  // unregistered while in use: erased by the last slice
};

}  // namespace

struct SharedMemoryManager::State {
  mutable Mutex mu;
  std::map<std::string, Entry> regions GUARDED_BY(mu);

  // Called by a slice as it dies.
  void Release(const std::string& name, const Region* region) {
    MutexLock lock(mu);
    auto it = regions.find(name);
    if (it == regions.end() || it->second.region.get() != region) return;
    if (--it->second.users == 0 && it->second.awaiting_unregister) regions.erase(it);
  }
};

namespace {

class RegionSlice : public ShmSlice {
 public:
  RegionSlice(std::shared_ptr<SharedMemoryManager::State> state, std::shared_ptr<Region> region,
              std::span<char> data)
      : state_(std::move(state)), region_(std::move(region)), data_(data) {}
  ~RegionSlice() override { state_->Release(region_->name, region_.get()); }
  std::span<char> data() const override { return data_; }

 private:
  std::shared_ptr<SharedMemoryManager::State> state_;
  std::shared_ptr<Region> region_;
  std::span<char> data_;
};

}  // namespace

SharedMemoryManager::SharedMemoryManager(const Options& options)
    : allow_client_shm_(options.allow_client_shm), state_(std::make_shared<State>()) {}

SharedMemoryManager::~SharedMemoryManager() = default;

Status SharedMemoryManager::ValidateKey(const std::string& name, const std::string& key) {
  const size_t first = key.find_first_not_of('/');
  if (first == std::string::npos) {
    return InvalidArgument("cannot register shared memory region '" + ClientText(name) +
                           "' - invalid shm key '" + ClientText(key) + "'");
  }
  if (key.compare(first, std::strlen(kReservedShmKeyPrefix), kReservedShmKeyPrefix) == 0) {
    return InvalidArgument("cannot register shared memory region '" + ClientText(name) +
                           "' with key '" + ClientText(key) +
                           "' as the key contains the reserved prefix '" + kReservedShmKeyPrefix +
                           "'");
  }
  return Status::Ok();
}

Status SharedMemoryManager::RegisterSystem(const std::string& name, const std::string& key,
                                           uint64_t offset, uint64_t byte_size) {
  if (!allow_client_shm_) return Unsupported(kClientShmDisabled);
  NEREID_RETURN_IF_ERROR(ValidateKey(name, key));
  MutexLock lock(state_->mu);
  if (state_->regions.count(name) != 0) {
    return AlreadyExists("shared memory region '" + ClientText(name) + "' already in manager");
  }
  auto region = std::make_shared<Region>();
  region->name = name;
  region->key = key;
  region->offset = offset;
  region->byte_size = byte_size;
  // O_NOFOLLOW: shm_open resolves inside /dev/shm; a symlink planted there is not followed.
  region->fd = shm_open(key.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC, S_IRUSR | S_IWUSR);
  if (region->fd == -1)
    return Internal("Unable to open shared memory region: '" + ClientText(key) + "'");
  struct stat st;
  // Only a regular shm object: a FIFO or device node someone placed in /dev/shm is refused.
  if (fstat(region->fd, &st) == -1 || !S_ISREG(st.st_mode) || st.st_size < 0) {
    return Internal("Invalid shared memory region: '" + ClientText(key) + "'");
  }
  const uint64_t object_size = static_cast<uint64_t>(st.st_size);
  if (offset > object_size || byte_size > object_size - offset) {
    return InvalidArgument("failed to register shared memory region '" + ClientText(name) +
                           "': invalid args");
  }
  void* addr = mmap(nullptr, byte_size, PROT_READ | PROT_WRITE, MAP_SHARED, region->fd,
                    static_cast<off_t>(offset));
  if (addr == MAP_FAILED) {
    return InvalidArgument("failed to register shared memory region '" + ClientText(name) +
                           "': unable to process address space" + std::strerror(errno));
  }
  region->base = static_cast<char*>(addr);
  state_->regions.emplace(name, Entry{std::move(region)});
  return Status::Ok();
}

Status SharedMemoryManager::RegisterCuda(const std::string& name) const {
  if (!allow_client_shm_) return Unsupported(kClientShmDisabled);
  return InvalidArgument("failed to register CUDA shared memory region: '" + ClientText(name) +
                         "', GPUs not supported");
}

StatusOr<std::vector<ShmRegionStatus>> SharedMemoryManager::SystemStatus(
    const std::string& name) const {
  std::vector<ShmRegionStatus> out;
  MutexLock lock(state_->mu);
  auto row = [](const Region& r) { return ShmRegionStatus{r.name, r.key, r.offset, r.byte_size}; };
  if (name.empty()) {
    for (const auto& [n, entry] : state_->regions) out.push_back(row(*entry.region));
    return out;
  }
  auto it = state_->regions.find(name);
  if (it == state_->regions.end()) {
    return NotFound("Unable to find system shared memory region: '" + ClientText(name) + "'");
  }
  out.push_back(row(*it->second.region));
  return out;
}

StatusOr<std::vector<ShmRegionStatus>> SharedMemoryManager::CudaStatus(
    const std::string& name) const {
  if (name.empty()) return std::vector<ShmRegionStatus>{};
  MutexLock lock(state_->mu);
  if (state_->regions.count(name) != 0) {
    return NotFound("The region named '" + ClientText(name) +
                    "' is registered as system shared memory, not CUDA shared memory");
  }
  return NotFound("Unable to find cuda shared memory region: '" + ClientText(name) + "'");
}

Status SharedMemoryManager::UnregisterSystem(const std::string& name) {
  if (!allow_client_shm_) return Unsupported(kClientShmDisabled);
  MutexLock lock(state_->mu);
  auto unregister = [&](std::map<std::string, Entry>::iterator it) {
    state_->mu.AssertHeld();
    if (it->second.users > 0) {
      it->second.awaiting_unregister = true;
      return std::next(it);
    }
    return state_->regions.erase(it);
  };
  if (name.empty()) {
    for (auto it = state_->regions.begin(); it != state_->regions.end();) it = unregister(it);
    return Status::Ok();
  }
  auto it = state_->regions.find(name);
  if (it != state_->regions.end()) unregister(it);
  return Status::Ok();
}

Status SharedMemoryManager::UnregisterCuda(const std::string&) const {
  if (!allow_client_shm_) return Unsupported(kClientShmDisabled);
  return Status::Ok();  // a CPU build never holds a CUDA region
}

StatusOr<std::shared_ptr<ShmSlice>> SharedMemoryManager::Acquire(const std::string& name,
                                                                 uint64_t offset,
                                                                 uint64_t byte_size) const {
  MutexLock lock(state_->mu);
  auto it = state_->regions.find(name);
  if (it == state_->regions.end()) {
    return NotFound("Unable to find shared memory region: '" + ClientText(name) + "'");
  }
  const Region& r = *it->second.region;
  if (offset >= r.byte_size) {
    return InvalidArgument("Invalid offset for shared memory region: '" + ClientText(name) + "'");
  }
  constexpr uint64_t kMax = std::numeric_limits<size_t>::max();
  if (byte_size > kMax - offset) {
    return InvalidArgument("Integer overflow detected: byte_size (" + std::to_string(byte_size) +
                           ") + offset (" + std::to_string(offset) + ") exceeds maximum value (" +
                           std::to_string(kMax) + ") for region '" + ClientText(name) + "'");
  }
  if (offset + byte_size > r.byte_size) {
    return InvalidArgument("Invalid offset + byte size for shared memory region: '" +
                           ClientText(name) + "'");
  }
  // The client may have shrunk the object since registration; touching mapped pages past its end
  // raises SIGBUS. What remains (a shrink between this check and the read) is in docs/security.md.
  struct stat st;
  if (fstat(r.fd, &st) == -1 || st.st_size < 0 ||
      static_cast<uint64_t>(st.st_size) < r.offset + offset + byte_size) {
    return InvalidArgument("Invalid shared memory region: '" + ClientText(name) +
                           "' is smaller than when it was registered");
  }
  ++it->second.users;
  return std::shared_ptr<ShmSlice>(std::make_shared<RegionSlice>(
      state_, it->second.region, std::span<char>(r.base + offset, byte_size)));
}

}  // namespace nereid
