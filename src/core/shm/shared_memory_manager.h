// SharedMemoryManager: the regions clients registered through Triton's system shared memory
// extension (REFERENCE-2.md §11), and the CUDA shared memory API answered as Triton's CPU-only
// build answers it. System and CUDA names share one name space (a CPU build never holds a CUDA
// region, but the status texts still tell the kinds apart).
//
// Safety rules (docs/security.md): keys are opened with shm_open only, never as paths; all-slash
// keys and the Python backend's reserved prefix are refused; the registered range is checked
// against fstat at registration and, before every use, against the object's current size (a client
// that truncates its object must not make the server read past the end: SIGBUS); every range a
// request names is bounds-checked with overflow-safe arithmetic.
//
// Lifetime: a request holds a ShmSlice for each range it uses. Unregistering a region in use
// succeeds at once; the region stays registered (listed by status, its name taken) until its last
// slice is gone, and is then unmapped. Slices may outlive the manager.
//
// Thread-safety: every method may be called from any thread concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nereid/status.h"

namespace nereid {

// One row of a status answer (HTTP array element, gRPC RegionStatus).
struct ShmRegionStatus {
  std::string name;
  std::string key;
  uint64_t offset = 0;
  uint64_t byte_size = 0;
};

// A bounds-checked range of a registered region, pinned while this object lives.
class ShmSlice {
 public:
  virtual ~ShmSlice() = default;
  // Writable for outputs; inputs only read it.
  virtual std::span<char> data() const = 0;
};

// The text Triton answers register and unregister with while --allow-client-shm is false.
inline constexpr char kClientShmDisabled[] =
    "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable.";
// The prefix of the Python backend's own regions; no client may register a key that starts with
// it (CVE-2025-23319 chain).
inline constexpr char kReservedShmKeyPrefix[] = "triton_python_backend_shm_region_";

class SharedMemoryManager {
 public:
  struct Options {
    bool allow_client_shm = false;  // --allow-client-shm (Triton's default since #8721: false)
  };
  explicit SharedMemoryManager(const Options& options);
  ~SharedMemoryManager();
  SharedMemoryManager(const SharedMemoryManager&) = delete;
  SharedMemoryManager& operator=(const SharedMemoryManager&) = delete;

  bool client_shm_allowed() const { return allow_client_shm_; }

  // Maps [offset, offset + byte_size) of POSIX shm object `key` as region `name`. Errors (in
  // Triton's order and texts): disabled, invalid or reserved key, name taken, shm_open failure,
  // range past the object, mmap failure (e.g. an offset that is not page-aligned).
  Status RegisterSystem(const std::string& name, const std::string& key, uint64_t offset,
                        uint64_t byte_size);
  // A CPU-only build: disabled, else INVALID_ARG "..., GPUs not supported".
  Status RegisterCuda(const std::string& name) const;

  // Every system region (empty `name`) or the one named; NOT_FOUND with Triton's texts.
  StatusOr<std::vector<ShmRegionStatus>> SystemStatus(const std::string& name) const;
  // Never any region on a CPU build; a named status is NOT_FOUND (Triton's texts).
  StatusOr<std::vector<ShmRegionStatus>> CudaStatus(const std::string& name) const;

  // Unknown names succeed; an empty name unregisters every system region. A region in use is
  // released when its last user finishes.
  Status UnregisterSystem(const std::string& name);
  Status UnregisterCuda(const std::string& name) const;

  // [offset, offset + byte_size) of region `name`, checked against the region (Triton's texts)
  // and against the shm object's current size. Holding the slice keeps the region mapped.
  StatusOr<std::shared_ptr<ShmSlice>> Acquire(const std::string& name, uint64_t offset,
                                              uint64_t byte_size) const;

  // The key rules alone (all-slash, reserved prefix), for tests and the codecs.
  static Status ValidateKey(const std::string& name, const std::string& key);

  struct State;  // the registry, shared with every slice (defined in the .cc)

 private:
  const bool allow_client_shm_;
  std::shared_ptr<State> state_;
};

}  // namespace nereid
