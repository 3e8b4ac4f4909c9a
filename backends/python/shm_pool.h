// The shared-memory pool one Python stub and its instance share (ADR 0014): a memfd the server
// maps and the stub maps again (it inherits the fd), sized by Triton's `shm-default-byte-size`
// and grown in steps of `shm-growth-byte-size`. The server writes tensors it sends to the stub
// (execute inputs, BLS results) into blocks of it; frames then carry the block's offset instead
// of the bytes. A memfd has no name: it dies with the last process that maps it, so a crashed
// stub leaves nothing in /dev/shm.
//
// Not thread-safe: the instance uses it from one Execute at a time, like its StubProcess (only
// the owners Pin returns may be dropped from any thread).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <vector>

#include "nereid/status.h"

namespace nereid::backends::python {

// Blocks of a range [0, capacity): first fit, freed blocks merge with free neighbours. Pure.
class ShmAllocator {
 public:
  static constexpr uint64_t kAlignment = 64;

  explicit ShmAllocator(uint64_t capacity);

  // The offset of a new block of `size` bytes (rounded up to kAlignment; a size of 0 takes one
  // unit), or nullopt when no free range is large enough.
  std::optional<uint64_t> Allocate(uint64_t size);
  // Frees the block at `offset` (from Allocate); other offsets are ignored.
  void Free(uint64_t offset);
  void FreeAll();
  // Extends the range to `capacity` (never shrinks); the new bytes are free.
  void Grow(uint64_t capacity);
  // The capacity Grow needs so that Allocate(size) succeeds: the current one plus the smallest
  // multiple of `step` that covers what the free range at the end lacks.
  uint64_t CapacityFor(uint64_t size, uint64_t step) const;

  // The block in use that holds [offset, offset + size), or nullopt.
  std::optional<uint64_t> BlockHolding(uint64_t offset, uint64_t size) const;
  // The offsets of the blocks in use.
  std::vector<uint64_t> UsedBlocks() const;

  uint64_t capacity() const { return capacity_; }
  uint64_t used() const { return used_bytes_; }
  size_t blocks() const { return used_.size(); }

 private:
  void AddFree(uint64_t offset, uint64_t size);

  uint64_t capacity_;
  uint64_t used_bytes_ = 0;
  std::map<uint64_t, uint64_t> free_;  // offset -> size, no two adjacent
  std::map<uint64_t, uint64_t> used_;  // offset -> size
};

// A block of the pool.
struct ShmBlock {
  uint64_t offset = 0;
  uint64_t size = 0;
};

// Bytes of the pool kept readable and unchanged for as long as `owner` lives (ShmPool::Pin).
struct PinnedBytes {
  std::span<const char> bytes;
  std::shared_ptr<const void> owner;
};

class ShmMapping;

class ShmPool {
 public:
  // Largest pool: growth past it fails and the caller falls back to the socket.
  static constexpr uint64_t kMaxSize = uint64_t{1} << 36;  // 64 GiB

  ~ShmPool();
  ShmPool(const ShmPool&) = delete;
  ShmPool& operator=(const ShmPool&) = delete;

  // A memfd of `initial_size` bytes, mapped. Errors are INTERNAL.
  static StatusOr<std::unique_ptr<ShmPool>> Create(uint64_t initial_size, uint64_t growth_size);

  // A block holding the chunks' bytes back to back (the one copy), growing the pool in steps of
  // the growth size when no free range fits. An error (the pool cannot grow) leaves it as it was.
  StatusOr<ShmBlock> Put(std::span<const std::span<const char>> chunks);
  // Frees the block at `offset`; a pinned one only once its pins are gone.
  void Free(uint64_t offset);
  // Frees every block (pinned ones once their pins are gone). Every kTrimWindow calls without a
  // pin alive, gives back to the system the memory past the initial size that blocks of that
  // window did not reach (the pool keeps its size and mappings; those pages read as zeros until
  // used again): one huge tensor does not keep its memory for the stub's lifetime, and a steady
  // load of big tensors does not fault its pages in again each time.
  void FreeAll();
  static constexpr int kTrimWindow = 64;

  // Keeps bytes [offset, offset + size) readable and unchanged for as long as the returned owner
  // lives, which any thread may drop (a BLS input the called request reads after the stub moved
  // on, ADR 0014): their block is not handed out again nor trimmed, and the mapping they are read
  // through stays mapped when the pool grows or is destroyed (a stub restart). nullopt when the
  // range is not inside one block in use (the caller copies those bytes).
  std::optional<PinnedBytes> Pin(uint64_t offset, uint64_t size);

  int fd() const { return fd_; }
  uint64_t size() const { return allocator_.capacity(); }
  const ShmAllocator& allocator() const { return allocator_; }
  std::span<const char> bytes() const { return {base_, allocator_.capacity()}; }

 private:
  ShmPool(int fd, std::shared_ptr<ShmMapping> mapping, char* base, uint64_t size, uint64_t growth)
      : fd_(fd),
        mapping_(std::move(mapping)),
        base_(base),
        initial_(size),
        growth_(growth),
        allocator_(size) {}
  Status Grow(uint64_t capacity);
  // Whether a pin of block `offset` is alive (forgets the dead ones).
  bool Pinned(uint64_t offset);
  // Frees the blocks whose freeing waited for their pins, once those are gone.
  void FreeUnpinned();

  int fd_;
  std::shared_ptr<ShmMapping> mapping_;  // the current mapping (pins keep older ones)
  char* base_;
  uint64_t initial_;
  uint64_t growth_;
  uint64_t written_end_ = 0;  // the end of the highest block written since the last trim
  uint64_t window_end_ = 0;   // the same, within the current window
  int window_calls_ = 0;
  ShmAllocator allocator_;
  // The pins of each pinned block, and the blocks freed while pinned.
  std::map<uint64_t, std::vector<std::weak_ptr<const void>>> pins_;
  std::set<uint64_t> deferred_;
};

}  // namespace nereid::backends::python
