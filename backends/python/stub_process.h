// One stub process (Debian's python3 running resources/nereid_python_stub.py) and the socket to
// it. Not thread-safe: its instance uses it from one Execute at a time (the decoupled sender
// threads live in the stub, not here).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "nereid/status.h"
#include "python/shm_pool.h"
#include "python/spin_wait.h"
#include "python/stub_protocol.h"

namespace nereid::backends::python {

struct StubCommand {
  std::string python;      // "/usr/bin/python3"
  std::string script;      // <resources>/nereid_python_stub.py
  std::string resources;   // prepended to PYTHONPATH (triton_python_backend_utils)
  std::string model_file;  // <model_dir>/<version>/model.py
  // The shared-memory pool (shm_pool.h): initial size and growth step; 0: none (the socket
  // carries every payload).
  uint64_t shm_default_size = 0;
  uint64_t shm_growth_size = 0;
  // EXECUTION_ENV_PATH resolved (execution_env.h), or empty. The stub still is `python`; it gets
  // VIRTUAL_ENV and PATH as the environment's activate script would set them, and
  // NEREID_EXECUTION_ENV, from which it puts the environment's site-packages on sys.path.
  std::string execution_env;
};

// The stub's environment ("NAME=value" each) from the server's `parent` (environ): `resources`
// first on PYTHONPATH; with an execution environment, VIRTUAL_ENV, PATH and NEREID_EXECUTION_ENV
// as StubCommand::execution_env says (PYTHONHOME dropped, as activate does).
std::vector<std::string> StubEnvironment(const StubCommand& command, char** parent);

// A received frame: JSON part and payload.
struct Frame {
  std::string json;
  std::vector<char> payload;
};

class StubProcess {
 public:
  ~StubProcess();  // kills a stub still running

  // Starts the stub. Errors are INTERNAL.
  static StatusOr<std::unique_ptr<StubProcess>> Start(const StubCommand& command);

  // Writes one frame: `json`, then every chunk (the payload), on the socket without a copy in
  // this process.
  Status Write(std::string_view json, std::span<const std::span<const char>> chunks) {
    return Send(json, chunks);
  }
  // Writes a frame whose binary header is `header` (an execute, EncodeExecute, or a BLS answer,
  // EncodeBlsAnswer). With a pool, the chunks are gathered into a block of it (one copy) and the
  // block's place (u64 offset, size, pool size) is written into the header at `slot`; without
  // one, or when the pool cannot grow, they follow the header on the socket (the slot stays zero).
  // Blocks live until ReleaseBlocks.
  Status WriteBinary(std::string* header, size_t slot,
                     std::span<const std::span<const char>> chunks);
  // While false, WriteBinary sends the chunks on the socket even with a pool: the stub then owns
  // their memory (an answer to a question asked while a non-decoupled instance is idle, whose
  // arrays model.py may keep past the next execution, which frees the pool's blocks).
  void UsePool(bool use) { use_pool_ = use; }
  // The stub's idle bell (an eventfd; the stub has it as fd 5): a thread of model.py rings it
  // after it wrote a frame while no execution was under way, so that the instance's watcher
  // reads the frame at once. RingCount() reads and clears it.
  int idle_bell() const { return bell_fd_; }
  uint64_t RingCount();
  // Frees every block Write put in the pool: the instance calls it when the stub is done with
  // them (at the start of the next execution when no request is still sending, see ADR 0014).
  void ReleaseBlocks() {
    written_.clear();
    if (pool_ != nullptr) pool_->FreeAll();
  }
  // The offsets of the blocks Write put in the pool since the last call: the instance frees them
  // by itself (FreeBlock) when they may outlive the execution (ADR 0014).
  std::vector<uint64_t> TakeWrittenBlocks() { return std::exchange(written_, {}); }
  void FreeBlock(uint64_t offset) {
    if (pool_ != nullptr) pool_->Free(offset);
  }
  const ShmPool* pool() const { return pool_.get(); }
  // ShmPool::Pin (nullopt without a pool).
  std::optional<PinnedBytes> Pin(uint64_t offset, uint64_t size) {
    return pool_ != nullptr ? pool_->Pin(offset, size) : std::nullopt;
  }
  // True when a frame (or part of one) can be read now: buffered or on the socket.
  bool Readable() const;
  int fd() const { return fd_; }
  // Reads one frame; `deadline` bounds the wait (time_point::max(): none). A closed socket, a
  // timeout or a malformed header is an error (the stub is then to be considered dead).
  StatusOr<Frame> Read(std::chrono::steady_clock::time_point deadline);
  // Reads `out.size()` bytes (a frame's payload, straight into its destination).
  Status ReadExact(std::span<char> out, std::chrono::steady_clock::time_point deadline);
  // Reads and drops `n` bytes.
  Status Skip(uint64_t n, std::chrono::steady_clock::time_point deadline);
  // The header of a frame into `header` (its capacity reused); the payload
  // (`sizes->payload_size` bytes) is left on the socket.
  Status ReadHeader(FrameSizes* sizes, std::chrono::steady_clock::time_point deadline,
                    std::string* header);

  // SIGKILLs and reaps the process (idempotent).
  void Kill();
  // Waits up to `timeout` for the process to exit by itself, then kills it.
  void WaitOrKill(std::chrono::milliseconds timeout);
  pid_t pid() const { return pid_; }

 private:
  static constexpr size_t kReadBufferSize = 64 * 1024;

  StubProcess(pid_t pid, int fd, int bell_fd, std::unique_ptr<ShmPool> pool,
              std::chrono::nanoseconds spin)
      : pid_(pid), fd_(fd), bell_fd_(bell_fd), pool_(std::move(pool)), spin_(spin) {}
  // Writes the frame's bytes: header, `json`, the chunks.
  Status Send(std::string_view json, std::span<const std::span<const char>> chunks);
  // Reads what the socket has (at least one byte) into the read buffer.
  Status Fill(std::chrono::steady_clock::time_point deadline);

  pid_t pid_;
  int fd_;
  int bell_fd_;  // the idle bell (eventfd)
  bool use_pool_ = true;
  std::unique_ptr<ShmPool> pool_;  // null: payloads go over the socket
  // Bytes received but not consumed yet: [rbegin_, rend_) of rbuf_. Small frames arrive whole
  // in one recv.
  std::vector<char> rbuf_;
  size_t rbegin_ = 0;
  size_t rend_ = 0;
  std::vector<uint64_t> written_;  // blocks put since the last TakeWrittenBlocks
  SpinPolicy spin_;                // the doorbell (spin_wait.h, ADR 0020)
};

}  // namespace nereid::backends::python
