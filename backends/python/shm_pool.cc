#include "python/shm_pool.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace nereid::backends::python {
namespace {

uint64_t RoundUp(uint64_t n, uint64_t unit) { return (n + unit - 1) / unit * unit; }

}  // namespace

// One mapping of the pool's memfd, unmapped with its last owner (the pool or a pin). The mapping
// keeps the memfd's memory alive after the pool closed its fd.
class ShmMapping {
 public:
  ShmMapping(char* base, uint64_t size) : base_(base), size_(size) {}
  ~ShmMapping() { munmap(base_, size_); }
  ShmMapping(const ShmMapping&) = delete;
  ShmMapping& operator=(const ShmMapping&) = delete;

 private:
  char* base_;
  uint64_t size_;
};

ShmAllocator::ShmAllocator(uint64_t capacity) : capacity_(capacity) {
  if (capacity_ > 0) free_[0] = capacity_;
}

void ShmAllocator::AddFree(uint64_t offset, uint64_t size) {
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && offset + size == next->first) {  // merge with the next range
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {  // merge with the previous range
      prev->second += size;
      return;
    }
  }
  free_.emplace_hint(next, offset, size);
}

std::optional<uint64_t> ShmAllocator::Allocate(uint64_t size) {
  if (size > capacity_) return std::nullopt;
  size = RoundUp(size == 0 ? 1 : size, kAlignment);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < size) continue;
    const uint64_t offset = it->first;
    const uint64_t left = it->second - size;
    free_.erase(it);
    if (left > 0) free_[offset + size] = left;
    used_[offset] = size;
    used_bytes_ += size;
    return offset;
  }
  return std::nullopt;
}

void ShmAllocator::Free(uint64_t offset) {
  auto it = used_.find(offset);
  if (it == used_.end()) return;
  used_bytes_ -= it->second;
  AddFree(it->first, it->second);
  used_.erase(it);
}

std::optional<uint64_t> ShmAllocator::BlockHolding(uint64_t offset, uint64_t size) const {
  auto it = used_.upper_bound(offset);
  if (it == used_.begin()) return std::nullopt;
  --it;
  if (offset - it->first > it->second || size > it->second - (offset - it->first)) {
    return std::nullopt;
  }
  return it->first;
}

std::vector<uint64_t> ShmAllocator::UsedBlocks() const {
  std::vector<uint64_t> blocks;
  blocks.reserve(used_.size());
  for (const auto& [offset, size] : used_) blocks.push_back(offset);
  return blocks;
}

void ShmAllocator::FreeAll() {
  used_.clear();
  free_.clear();
  used_bytes_ = 0;
  if (capacity_ > 0) free_[0] = capacity_;
}

void ShmAllocator::Grow(uint64_t capacity) {
  if (capacity <= capacity_) return;
  const uint64_t old = capacity_;
  capacity_ = capacity;
  AddFree(old, capacity - old);
}

uint64_t ShmAllocator::CapacityFor(uint64_t size, uint64_t step) const {
  size = RoundUp(size == 0 ? 1 : size, kAlignment);
  uint64_t tail = 0;  // the free range that ends at capacity_
  if (!free_.empty()) {
    auto last = std::prev(free_.end());
    if (last->first + last->second == capacity_) tail = last->second;
  }
  if (step == 0) step = kAlignment;
  return capacity_ + RoundUp(size - std::min(size, tail), step);
}

ShmPool::~ShmPool() {
  mapping_.reset();  // unmapped unless a pin still reads through it
  if (fd_ >= 0) close(fd_);
}

StatusOr<std::unique_ptr<ShmPool>> ShmPool::Create(uint64_t initial_size, uint64_t growth_size) {
  const int fd = memfd_create("nereid_python_shm", MFD_CLOEXEC);
  if (fd < 0) {
    return Internal(std::string("unable to create the Python stub's shared memory: ") +
                    std::strerror(errno));
  }
  if (ftruncate(fd, static_cast<off_t>(initial_size)) != 0) {
    const int e = errno;
    close(fd);
    return Internal("unable to size the Python stub's shared memory to " +
                    std::to_string(initial_size) + " bytes: " + std::strerror(e));
  }
  void* base = mmap(nullptr, initial_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    const int e = errno;
    close(fd);
    return Internal(std::string("unable to map the Python stub's shared memory: ") +
                    std::strerror(e));
  }
  auto mapping = std::make_shared<ShmMapping>(static_cast<char*>(base), initial_size);
  return std::unique_ptr<ShmPool>(
      new ShmPool(fd, std::move(mapping), static_cast<char*>(base), initial_size, growth_size));
}

Status ShmPool::Grow(uint64_t capacity) {
  const uint64_t old = allocator_.capacity();
  if (capacity > kMaxSize) {
    return Unavailable("the Python stub's shared memory would exceed " + std::to_string(kMaxSize) +
                       " bytes");
  }
  if (ftruncate(fd_, static_cast<off_t>(capacity)) != 0) {
    return Unavailable(std::string("unable to grow the Python stub's shared memory: ") +
                       std::strerror(errno));
  }
  // A new mapping rather than mremap: a pin may still read through the old one.
  void* base = mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (base == MAP_FAILED) {
    const int e = errno;
    (void)ftruncate(fd_, static_cast<off_t>(old));
    return Unavailable(std::string("unable to map the grown shared memory: ") + std::strerror(e));
  }
  mapping_ = std::make_shared<ShmMapping>(static_cast<char*>(base), capacity);
  base_ = static_cast<char*>(base);
  allocator_.Grow(capacity);
  return Status::Ok();
}

std::optional<PinnedBytes> ShmPool::Pin(uint64_t offset, uint64_t size) {
  const std::optional<uint64_t> block = allocator_.BlockHolding(offset, size);
  if (!block) return std::nullopt;
  auto owner = std::make_shared<const std::shared_ptr<ShmMapping>>(mapping_);
  std::vector<std::weak_ptr<const void>>& pins = pins_[*block];
  if (pins.size() >= 16) (void)Pinned(*block);  // forget the dead ones now and then
  pins.push_back(owner);
  return PinnedBytes{{base_ + offset, size}, std::move(owner)};
}

bool ShmPool::Pinned(uint64_t offset) {
  auto it = pins_.find(offset);
  if (it == pins_.end()) return false;
  std::erase_if(it->second, [](const std::weak_ptr<const void>& p) { return p.expired(); });
  if (!it->second.empty()) return true;
  pins_.erase(it);
  return false;
}

void ShmPool::FreeUnpinned() {
  for (auto it = deferred_.begin(); it != deferred_.end();) {
    if (Pinned(*it)) {
      ++it;
    } else {
      allocator_.Free(*it);
      it = deferred_.erase(it);
    }
  }
}

void ShmPool::Free(uint64_t offset) {
  if (Pinned(offset)) {
    deferred_.insert(offset);
  } else {
    allocator_.Free(offset);
  }
}

void ShmPool::FreeAll() {
  if (!pins_.empty()) {
    for (uint64_t offset : allocator_.UsedBlocks()) Free(offset);
    if (!pins_.empty()) return;  // no trim while a pin is alive: its pages must stay
  }
  allocator_.FreeAll();
  deferred_.clear();
  if (++window_calls_ < kTrimWindow) return;
  const uint64_t keep = std::max(initial_, window_end_);
  if (written_end_ > keep) {
    // Up to the end of the pool (whole pages). Best effort: on failure the pages stay in use
    // until the stub ends.
    (void)fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(keep),
                    static_cast<off_t>(allocator_.capacity() - keep));
  }
  written_end_ = window_end_;
  window_end_ = 0;
  window_calls_ = 0;
}

StatusOr<ShmBlock> ShmPool::Put(std::span<const std::span<const char>> chunks) {
  if (!deferred_.empty()) FreeUnpinned();
  ShmBlock block;
  for (const auto& c : chunks) block.size += c.size();
  std::optional<uint64_t> offset = allocator_.Allocate(block.size);
  if (!offset) {
    NEREID_RETURN_IF_ERROR(Grow(allocator_.CapacityFor(block.size, growth_)));
    offset = allocator_.Allocate(block.size);
    if (!offset) return Internal("the Python stub's shared memory did not grow enough");
  }
  block.offset = *offset;
  written_end_ = std::max(written_end_, block.offset + block.size);
  window_end_ = std::max(window_end_, block.offset + block.size);
  char* out = base_ + block.offset;
  for (const auto& c : chunks) {
    if (c.empty()) continue;
    std::memcpy(out, c.data(), c.size());
    out += c.size();
  }
  return block;
}

}  // namespace nereid::backends::python
