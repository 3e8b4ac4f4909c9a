// A bump allocator for the header of the request a connection is parsing (Boost.Beast allocates
// one block per header field, plus one for the method and target): one block per connection,
// reused for every request, so a header that fits allocates nothing. What does not fit comes
// from the heap and is freed as usual. Reset() only when nothing allocated from it is alive (the
// parser and the message it produced are gone). Not thread-safe: one connection's strand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

namespace nereid {

class HeaderArena {
 public:
  explicit HeaderArena(size_t bytes) : block_(new char[bytes]), capacity_(bytes) {}
  HeaderArena(const HeaderArena&) = delete;
  HeaderArena& operator=(const HeaderArena&) = delete;

  void* Allocate(size_t bytes, size_t align) {
    const size_t start = (used_ + align - 1) & ~(align - 1);
    if (start <= capacity_ && bytes <= capacity_ - start) {
      used_ = start + bytes;
      return block_.get() + start;
    }
    ++overflows_;
    return ::operator new(bytes, std::align_val_t(align));
  }
  void Deallocate(void* p, size_t align) {
    if (!Owns(p)) ::operator delete(p, std::align_val_t(align));
  }
  void Reset() { used_ = 0; }

  bool Owns(const void* p) const {
    const auto* c = static_cast<const char*>(p);
    return c >= block_.get() && c < block_.get() + capacity_;
  }
  size_t used() const { return used_; }
  uint64_t overflows() const { return overflows_; }  // allocations the block could not hold

 private:
  std::unique_ptr<char[]> block_;
  size_t capacity_;
  size_t used_ = 0;
  uint64_t overflows_ = 0;
};

// The standard allocator interface over a HeaderArena (for Beast's basic_fields).
template <typename T>
class HeaderArenaAllocator {
 public:
  using value_type = T;
  explicit HeaderArenaAllocator(HeaderArena* arena) : arena_(arena) {}
  template <typename U>
  HeaderArenaAllocator(const HeaderArenaAllocator<U>& other) : arena_(other.arena()) {}

  T* allocate(size_t n) { return static_cast<T*>(arena_->Allocate(n * sizeof(T), alignof(T))); }
  void deallocate(T* p, size_t) { arena_->Deallocate(p, alignof(T)); }
  HeaderArena* arena() const { return arena_; }

  template <typename U>
  bool operator==(const HeaderArenaAllocator<U>& o) const {
    return arena_ == o.arena();
  }
  template <typename U>
  bool operator!=(const HeaderArenaAllocator<U>& o) const {
    return arena_ != o.arena();
  }

 private:
  HeaderArena* arena_;
};

}  // namespace nereid
