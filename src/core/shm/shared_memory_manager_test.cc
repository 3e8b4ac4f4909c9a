#include "core/shm/shared_memory_manager.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <thread>

#include "core/shm/shm_test_object.h"

namespace nereid {
namespace {

const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));

SharedMemoryManager Enabled() { return SharedMemoryManager({.allow_client_shm = true}); }

std::string Message(const Status& s) { return s.message(); }
template <typename T>
std::string Message(const StatusOr<T>& s) {
  return s.status().message();
}

TEST(SharedMemoryManagerTest, DisabledByDefaultButStatusWorks) {
  SharedMemoryManager m({});
  TestShmObject obj(64);
  Status s = m.RegisterSystem("r", obj.key(), 0, 64);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_EQ(s.message(),
            "Client shared memory is disabled. Start the server with '--allow-client-shm=true' "
            "to enable.");
  EXPECT_EQ(m.UnregisterSystem("r").code(), StatusCode::kUnsupported);
  EXPECT_EQ(m.RegisterCuda("c").code(), StatusCode::kUnsupported);
  EXPECT_EQ(m.UnregisterCuda("").code(), StatusCode::kUnsupported);
  auto status = m.SystemStatus("");
  ASSERT_TRUE(status.ok());
  EXPECT_TRUE(status->empty());
}

TEST(SharedMemoryManagerTest, KeyRules) {
  auto m = Enabled();
  EXPECT_EQ(Message(m.RegisterSystem("r", "/", 0, 8)),
            "cannot register shared memory region 'r' - invalid shm key '/'");
  EXPECT_EQ(Message(m.RegisterSystem("r", "///", 0, 8)),
            "cannot register shared memory region 'r' - invalid shm key '///'");
  EXPECT_EQ(Message(m.RegisterSystem("r", "", 0, 8)),
            "cannot register shared memory region 'r' - invalid shm key ''");
  Status reserved = m.RegisterSystem("r", "//triton_python_backend_shm_region_1", 0, 8);
  EXPECT_EQ(reserved.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(reserved.message(),
            "cannot register shared memory region 'r' with key "
            "'//triton_python_backend_shm_region_1' as the key contains the reserved prefix "
            "'triton_python_backend_shm_region_'");
  EXPECT_TRUE(SharedMemoryManager::ValidateKey("r", "/x_triton_python_backend_shm_region_").ok());
}

TEST(SharedMemoryManagerTest, OpensOnlyShmObjects) {
  auto m = Enabled();
  Status s = m.RegisterSystem("r", "/nereid_no_such_object", 0, 8);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_EQ(s.message(), "Unable to open shared memory region: '/nereid_no_such_object'");
  // A path is never opened as a file: shm_open refuses names with inner slashes.
  EXPECT_EQ(Message(m.RegisterSystem("r", "/../../etc/passwd", 0, 8)),
            "Unable to open shared memory region: '/../../etc/passwd'");
  EXPECT_EQ(m.RegisterSystem("r", "/..", 0, 8).code(), StatusCode::kInternal);
}

TEST(SharedMemoryManagerTest, RefusesObjectsThatAreNotRegularFiles) {
  auto m = Enabled();
  const std::string name = "nereid_shm_test_fifo_" + std::to_string(getpid());
  ASSERT_EQ(mkfifo(("/dev/shm/" + name).c_str(), 0600), 0);
  Status s = m.RegisterSystem("r", "/" + name, 0, 8);
  unlink(("/dev/shm/" + name).c_str());
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_EQ(s.message(), "Invalid shared memory region: '/" + name + "'");
}

TEST(SharedMemoryManagerTest, RegisterStatusUnregister) {
  auto m = Enabled();
  TestShmObject obj(256);
  ASSERT_TRUE(m.RegisterSystem("r", obj.key(), 0, 128).ok());
  Status again = m.RegisterSystem("r", obj.key(), 0, 128);
  EXPECT_EQ(again.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(again.message(), "shared memory region 'r' already in manager");
  ASSERT_TRUE(m.RegisterSystem("r2", obj.key(), 0, 256).ok());
  auto all = m.SystemStatus("");
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].name, "r");
  EXPECT_EQ((*all)[0].key, obj.key());
  EXPECT_EQ((*all)[0].byte_size, 128u);
  auto missing = m.SystemStatus("x");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Message(missing), "Unable to find system shared memory region: 'x'");
  EXPECT_TRUE(m.UnregisterSystem("unknown").ok());
  EXPECT_TRUE(m.UnregisterSystem("r").ok());
  EXPECT_EQ(m.SystemStatus("")->size(), 1u);
  EXPECT_TRUE(m.UnregisterSystem("").ok());
  EXPECT_TRUE(m.SystemStatus("")->empty());
  EXPECT_TRUE(m.RegisterSystem("r", obj.key(), 0, 128).ok());
}

TEST(SharedMemoryManagerTest, RegisterBoundsAgainstTheObject) {
  auto m = Enabled();
  TestShmObject obj(2 * kPage);
  EXPECT_EQ(Message(m.RegisterSystem("r", obj.key(), 0, 2 * kPage + 1)),
            "failed to register shared memory region 'r': invalid args");
  EXPECT_EQ(Message(m.RegisterSystem("r", obj.key(), kPage, kPage + 1)),
            "failed to register shared memory region 'r': invalid args");
  // offset + byte_size wraps around 2^64: still refused, never mapped.
  EXPECT_EQ(Message(m.RegisterSystem("r", obj.key(), UINT64_MAX, 2)),
            "failed to register shared memory region 'r': invalid args");
  EXPECT_EQ(Message(m.RegisterSystem("r", obj.key(), 2, UINT64_MAX)),
            "failed to register shared memory region 'r': invalid args");
  Status unaligned = m.RegisterSystem("r", obj.key(), 8, 16);
  EXPECT_EQ(unaligned.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(unaligned.message(),
            "failed to register shared memory region 'r': unable to process address "
            "spaceInvalid argument");
  EXPECT_TRUE(m.SystemStatus("")->empty());
}

TEST(SharedMemoryManagerTest, RegistrationOffsetIsAppliedOnce) {
  auto m = Enabled();
  TestShmObject obj(4 * kPage);
  obj.Write(3 * kPage + 4, "abcd");
  ASSERT_TRUE(m.RegisterSystem("r", obj.key(), 3 * kPage, kPage).ok());
  auto slice = m.Acquire("r", 4, 4);
  ASSERT_TRUE(slice.ok()) << Message(slice);
  EXPECT_EQ(std::string((*slice)->data().data(), 4), "abcd");
  std::memcpy((*slice)->data().data(), "wxyz", 4);
  EXPECT_EQ(obj.Read(3 * kPage + 4, 4), "wxyz");
  EXPECT_EQ(m.SystemStatus("r")->front().offset, 3 * kPage);
}

TEST(SharedMemoryManagerTest, AcquireBounds) {
  auto m = Enabled();
  TestShmObject obj(64);
  ASSERT_TRUE(m.RegisterSystem("r", obj.key(), 0, 64).ok());
  EXPECT_EQ(m.Acquire("x", 0, 4).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Message(m.Acquire("x", 0, 4)), "Unable to find shared memory region: 'x'");
  EXPECT_EQ(Message(m.Acquire("r", 64, 0)), "Invalid offset for shared memory region: 'r'");
  EXPECT_EQ(Message(m.Acquire("r", UINT64_MAX, 1)), "Invalid offset for shared memory region: 'r'");
  EXPECT_EQ(Message(m.Acquire("r", 8, UINT64_MAX - 4)),
            "Integer overflow detected: byte_size (18446744073709551611) + offset (8) exceeds "
            "maximum value (18446744073709551615) for region 'r'");
  EXPECT_EQ(Message(m.Acquire("r", 8, 57)),
            "Invalid offset + byte size for shared memory region: 'r'");
  auto whole = m.Acquire("r", 0, 64);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ((*whole)->data().size(), 64u);
  auto empty = m.Acquire("r", 63, 0);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ((*empty)->data().size(), 0u);
}

TEST(SharedMemoryManagerTest, TruncatedObjectIsRefusedNotRead) {
  auto m = Enabled();
  TestShmObject obj(2 * kPage);
  ASSERT_TRUE(m.RegisterSystem("r", obj.key(), 0, 2 * kPage).ok());
  obj.Resize(kPage);
  auto past = m.Acquire("r", kPage - 8, 16);
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(Message(past),
            "Invalid shared memory region: 'r' is smaller than when it was registered");
  // What is still backed stays usable.
  auto inside = m.Acquire("r", 0, kPage);
  ASSERT_TRUE(inside.ok());
  EXPECT_EQ((*inside)->data()[kPage - 1], '\0');
  obj.Resize(0);
  EXPECT_FALSE(m.Acquire("r", 0, 1).ok());
}

TEST(SharedMemoryManagerTest, UnregisterInUseWaitsForTheLastUser) {
  auto m = Enabled();
  TestShmObject obj(64);
  ASSERT_TRUE(m.RegisterSystem("r", obj.key(), 0, 64).ok());
  auto a = m.Acquire("r", 0, 8);
  auto b = m.Acquire("r", 8, 8);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(m.UnregisterSystem("r").ok());
  // Still listed, its name still taken, and still usable by new requests meanwhile (as Triton).
  EXPECT_EQ(m.SystemStatus("r")->size(), 1u);
  EXPECT_EQ(m.RegisterSystem("r", obj.key(), 0, 64).code(), StatusCode::kAlreadyExists);
  std::memcpy((*a)->data().data(), "12345678", 8);
  a->reset();
  EXPECT_EQ(m.SystemStatus("r")->size(), 1u);
  b->reset();
  EXPECT_EQ(m.SystemStatus("r").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(obj.Read(0, 8), "12345678");
  EXPECT_TRUE(m.RegisterSystem("r", obj.key(), 0, 64).ok());
}

TEST(SharedMemoryManagerTest, UnregisterAllDefersOnlyRegionsInUse) {
  auto m = Enabled();
  TestShmObject obj(64);
  ASSERT_TRUE(m.RegisterSystem("a", obj.key(), 0, 64).ok());
  ASSERT_TRUE(m.RegisterSystem("b", obj.key(), 0, 64).ok());
  auto held = m.Acquire("b", 0, 4);
  ASSERT_TRUE(held.ok());
  EXPECT_TRUE(m.UnregisterSystem("").ok());
  auto left = m.SystemStatus("");
  ASSERT_EQ(left->size(), 1u);
  EXPECT_EQ(left->front().name, "b");
  held->reset();
  EXPECT_TRUE(m.SystemStatus("")->empty());
}

TEST(SharedMemoryManagerTest, SliceOutlivesTheManager) {
  TestShmObject obj(64);
  std::shared_ptr<ShmSlice> slice;
  {
    auto m = Enabled();
    ASSERT_TRUE(m.RegisterSystem("r", obj.key(), 0, 64).ok());
    slice = *m.Acquire("r", 0, 4);
  }
  std::memcpy(slice->data().data(), "zzzz", 4);
  slice.reset();
  EXPECT_EQ(obj.Read(0, 4), "zzzz");
}

TEST(SharedMemoryManagerTest, CudaAnswersAsACpuBuild) {
  auto m = Enabled();
  TestShmObject obj(64);
  ASSERT_TRUE(m.RegisterSystem("sys", obj.key(), 0, 64).ok());
  EXPECT_TRUE(m.CudaStatus("")->empty());
  EXPECT_EQ(Message(m.CudaStatus("c")), "Unable to find cuda shared memory region: 'c'");
  EXPECT_EQ(m.CudaStatus("c").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Message(m.CudaStatus("sys")),
            "The region named 'sys' is registered as system shared memory, not CUDA shared memory");
  Status reg = m.RegisterCuda("c");
  EXPECT_EQ(reg.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(reg.message(), "failed to register CUDA shared memory region: 'c', GPUs not supported");
  EXPECT_TRUE(m.UnregisterCuda("sys").ok());
  EXPECT_EQ(m.SystemStatus("")->size(), 1u);
}

TEST(SharedMemoryManagerTest, ConcurrentAcquireAndUnregister) {
  auto m = Enabled();
  TestShmObject obj(4096);
  std::atomic<bool> stop{false};
  std::thread user([&] {
    while (!stop) {
      auto s = m.Acquire("r", 0, 4096);
      if (s.ok()) (*s)->data()[0] = 'x';
    }
  });
  for (int i = 0; i < 200; ++i) {
    Status r = m.RegisterSystem("r", obj.key(), 0, 4096);
    EXPECT_TRUE(r.ok() || r.code() == StatusCode::kAlreadyExists) << r.message();
    EXPECT_TRUE(m.UnregisterSystem("r").ok());
  }
  stop = true;
  user.join();
}

}  // namespace
}  // namespace nereid
