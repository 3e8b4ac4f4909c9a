// A POSIX shm object for the shm tests: created with a unique name, unlinked when destroyed.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>

namespace nereid {

class TestShmObject {
 public:
  explicit TestShmObject(size_t size) {
    static std::atomic<int> counter{0};
    key_ = "/nereid_shm_test_" + std::to_string(getpid()) + "_" + std::to_string(counter++);
    fd_ = shm_open(key_.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    Resize(size);
  }
  ~TestShmObject() {
    close(fd_);
    shm_unlink(key_.c_str());
  }
  const std::string& key() const { return key_; }
  void Resize(size_t size) {
    if (ftruncate(fd_, static_cast<off_t>(size)) != 0) std::abort();
  }
  // Writes `bytes` at `offset` of the object (through the descriptor, not a mapping).
  void Write(size_t offset, const std::string& bytes) {
    if (pwrite(fd_, bytes.data(), bytes.size(), static_cast<off_t>(offset)) !=
        static_cast<ssize_t>(bytes.size())) {
      std::abort();
    }
  }
  std::string Read(size_t offset, size_t size) {
    std::string out(size, '\0');
    if (pread(fd_, out.data(), size, static_cast<off_t>(offset)) != static_cast<ssize_t>(size)) {
      std::abort();
    }
    return out;
  }

 private:
  std::string key_;
  int fd_ = -1;
};

}  // namespace nereid
