#include "frontends/http/http_session_buffers.h"

#include <sys/mman.h>
#include <unistd.h>

#include <new>
#include <utility>

namespace nereid {
namespace {

size_t PageRounded(size_t size) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (size + page - 1) / page * page;
}

void Unmap(char* data, size_t capacity) { munmap(data, capacity); }

}  // namespace

LargeBufferPool::~LargeBufferPool() {
  MutexLock lock(mu_);
  for (const Block& b : spare_) Unmap(b.data, b.capacity);
}

std::shared_ptr<char> LargeBufferPool::Acquire(size_t size) {
  Block block{nullptr, 0};
  {
    MutexLock lock(mu_);
    size_t best = spare_.size();
    for (size_t i = 0; i < spare_.size(); ++i) {
      if (spare_[i].capacity >= size &&
          (best == spare_.size() || spare_[i].capacity < spare_[best].capacity)) {
        best = i;
      }
    }
    if (best != spare_.size()) {
      block = spare_[best];
      spare_.erase(spare_.begin() + static_cast<std::ptrdiff_t>(best));
    }
  }
  if (block.data == nullptr) {
    block.capacity = PageRounded(size);
    void* p =
        mmap(nullptr, block.capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    block.data = static_cast<char*>(p);
  }
  try {
    return std::shared_ptr<char>(block.data, [this, block](char*) { Release(block); });
  } catch (...) {  // the control block's allocation failed: the deleter was not called
    Unmap(block.data, block.capacity);
    throw;
  }
}

void LargeBufferPool::Release(Block block) {
  {
    MutexLock lock(mu_);
    if (spare_.size() < max_spare_) {
      spare_.push_back(block);
      return;
    }
    // Full: keep the larger of this block and the smallest spare, so a run of large bodies does
    // not map afresh each time because small spares hold the places.
    size_t smallest = 0;
    for (size_t i = 1; i < spare_.size(); ++i) {
      if (spare_[i].capacity < spare_[smallest].capacity) smallest = i;
    }
    if (!spare_.empty() && spare_[smallest].capacity < block.capacity) {
      std::swap(spare_[smallest], block);
    }
  }
  Unmap(block.data, block.capacity);
}

size_t LargeBufferPool::spare_count() const {
  MutexLock lock(mu_);
  return spare_.size();
}

size_t LargeBufferPool::spare_bytes() const {
  MutexLock lock(mu_);
  size_t total = 0;
  for (const Block& b : spare_) total += b.capacity;
  return total;
}

LargeBufferPool& LargeBufferPool::ForBodies() {
  static LargeBufferPool* pool = new LargeBufferPool(2);  // NOLINT: lives as long as the process
  return *pool;
}

}  // namespace nereid
