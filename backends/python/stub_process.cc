#include "python/stub_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

extern char** environ;

namespace nereid::backends::python {
namespace {

constexpr int kChildFd = 3;
constexpr int kChildShmFd = 4;  // the pool's memfd, when there is one

Status Dead(const std::string& what) { return Unavailable("stub process " + what); }

// Waits until fd is readable; false on timeout.
bool WaitReadable(int fd, std::chrono::steady_clock::time_point deadline) {
  while (true) {
    int timeout_ms = -1;
    if (deadline != std::chrono::steady_clock::time_point::max()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      timeout_ms = static_cast<int>(std::min<int64_t>(left.count() + 1, 1 << 30));
    }
    pollfd p{fd, POLLIN, 0};
    const int r = poll(&p, 1, timeout_ms);
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) return true;  // let recv report it
  }
}

}  // namespace

StatusOr<std::unique_ptr<StubProcess>> StubProcess::Start(const StubCommand& command) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return Internal(std::string("unable to create the stub socket: ") + std::strerror(errno));
  }
  std::vector<std::string> env_strings;
  std::string pythonpath = "PYTHONPATH=" + command.resources;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "PYTHONPATH=", 11) == 0) {
      pythonpath += ":" + std::string(*e + 11);
    } else {
      env_strings.emplace_back(*e);
    }
  }
  env_strings.push_back(pythonpath);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::unique_ptr<ShmPool> pool;
  if (command.shm_default_size > 0) {
    StatusOr<std::unique_ptr<ShmPool>> created =
        ShmPool::Create(command.shm_default_size, command.shm_growth_size);
    if (!created.ok()) {
      close(fds[0]);
      close(fds[1]);
      return created.status();
    }
    pool = std::move(*created);
  }
  std::string fd_arg = std::to_string(kChildFd);
  std::string shm_arg = pool != nullptr ? std::to_string(kChildShmFd) : "-1";
  std::string python = command.python, script = command.script, model = command.model_file;
  std::string no_site_user = "-s";
  char* argv[] = {python.data(), no_site_user.data(), script.data(), fd_arg.data(),
                  model.data(),  shm_arg.data(),      nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], kChildFd);
  if (pool != nullptr) posix_spawn_file_actions_adddup2(&actions, pool->fd(), kChildShmFd);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // The stub gets default signal handling and its own process group (a ^C to the server's
  // group is the server's to handle; the server ends its stubs).
  sigset_t all;
  sigemptyset(&all);
  posix_spawnattr_setsigmask(&attr, &all);
  sigset_t defaults;
  sigfillset(&defaults);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, python.c_str(), &actions, &attr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return Internal("unable to start the Python stub '" + command.python +
                    "': " + std::strerror(rc));
  }
  return std::unique_ptr<StubProcess>(new StubProcess(pid, fds[0], std::move(pool)));
}

StubProcess::~StubProcess() {
  Kill();
  if (fd_ >= 0) close(fd_);
}

Status StubProcess::Write(std::string_view json, std::span<const std::span<const char>> chunks) {
  if (pool_ == nullptr || chunks.empty() || json.empty() || json.back() != '}') {
    return Send(json, chunks);
  }
  StatusOr<ShmBlock> block = pool_->Put(chunks);
  if (!block.ok()) return Send(json, chunks);  // the pool cannot grow: the socket carries them
  written_.push_back(block->offset);
  std::string with_block(json.substr(0, json.size() - 1));
  with_block += json.size() > 2 ? ",\"shm\":[" : "\"shm\":[";
  with_block += std::to_string(block->offset) + "," + std::to_string(block->size) + "," +
                std::to_string(pool_->size()) + "]}";
  return Send(with_block, {});
}

bool StubProcess::Readable() const {
  if (rend_ > rbegin_) return true;
  pollfd p{fd_, POLLIN, 0};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)) != 0;
}

Status StubProcess::Send(std::string_view json, std::span<const std::span<const char>> chunks) {
  FrameSizes sizes;
  sizes.json_size = static_cast<uint32_t>(json.size());
  for (const auto& c : chunks) sizes.payload_size += c.size();
  const auto header = EncodeFrameHeader(sizes);
  std::vector<iovec> iov;
  iov.reserve(2 + chunks.size());
  iov.push_back({const_cast<char*>(header.data()), header.size()});
  iov.push_back({const_cast<char*>(json.data()), json.size()});
  for (const auto& c : chunks) {
    if (!c.empty()) iov.push_back({const_cast<char*>(c.data()), c.size()});
  }
  size_t i = 0;
  while (i < iov.size()) {
    msghdr msg{};
    msg.msg_iov = iov.data() + i;
    msg.msg_iovlen = std::min<size_t>(iov.size() - i, IOV_MAX);
    const ssize_t n = sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Dead(std::string("write failed: ") + std::strerror(errno));
    }
    size_t left = static_cast<size_t>(n);
    while (i < iov.size() && left >= iov[i].iov_len) left -= iov[i++].iov_len;
    if (left > 0) {
      iov[i].iov_base = static_cast<char*>(iov[i].iov_base) + left;
      iov[i].iov_len -= left;
    }
  }
  return Status::Ok();
}

Status StubProcess::Fill(std::chrono::steady_clock::time_point deadline) {
  if (rbegin_ == rend_) rbegin_ = rend_ = 0;
  if (rbuf_.empty()) rbuf_.resize(kReadBufferSize);
  if (rend_ == rbuf_.size()) {  // compact
    std::memmove(rbuf_.data(), rbuf_.data() + rbegin_, rend_ - rbegin_);
    rend_ -= rbegin_;
    rbegin_ = 0;
  }
  while (true) {
    const ssize_t n = recv(fd_, rbuf_.data() + rend_, rbuf_.size() - rend_, MSG_DONTWAIT);
    if (n > 0) {
      rend_ += static_cast<size_t>(n);
      return Status::Ok();
    }
    if (n == 0) return Dead("exited");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return Dead(std::string("read failed: ") + std::strerror(errno));
    }
    if (!WaitReadable(fd_, deadline)) return Dead("timed out");
  }
}

Status StubProcess::ReadExact(std::span<char> out, std::chrono::steady_clock::time_point deadline) {
  size_t got = 0;
  while (got < out.size()) {
    if (rbegin_ < rend_) {
      const size_t k = std::min(out.size() - got, rend_ - rbegin_);
      std::memcpy(out.data() + got, rbuf_.data() + rbegin_, k);
      rbegin_ += k;
      got += k;
      continue;
    }
    if (out.size() - got < kReadBufferSize / 2) {
      NEREID_RETURN_IF_ERROR(Fill(deadline));
      continue;
    }
    // A large payload goes straight to its destination.
    const ssize_t n = recv(fd_, out.data() + got, out.size() - got, MSG_DONTWAIT);
    if (n > 0) {
      got += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return Dead("exited");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return Dead(std::string("read failed: ") + std::strerror(errno));
    }
    if (!WaitReadable(fd_, deadline)) return Dead("timed out");
  }
  return Status::Ok();
}

Status StubProcess::Skip(uint64_t n, std::chrono::steady_clock::time_point deadline) {
  char buf[64 * 1024];
  while (n > 0) {
    const size_t k = static_cast<size_t>(std::min<uint64_t>(n, sizeof(buf)));
    NEREID_RETURN_IF_ERROR(ReadExact(std::span<char>(buf, k), deadline));
    n -= k;
  }
  return Status::Ok();
}

StatusOr<std::string> StubProcess::ReadHeader(FrameSizes* sizes,
                                              std::chrono::steady_clock::time_point deadline) {
  std::array<char, kFrameHeaderSize> raw;
  NEREID_RETURN_IF_ERROR(ReadExact(raw, deadline));
  NEREID_ASSIGN_OR_RETURN(*sizes, DecodeFrameHeader(raw));
  std::string json(sizes->json_size, '\0');
  NEREID_RETURN_IF_ERROR(ReadExact(json, deadline));
  return json;
}

StatusOr<Frame> StubProcess::Read(std::chrono::steady_clock::time_point deadline) {
  FrameSizes sizes;
  Frame frame;
  NEREID_ASSIGN_OR_RETURN(frame.json, ReadHeader(&sizes, deadline));
  try {
    frame.payload.resize(sizes.payload_size);
  } catch (const std::exception&) {
    return Internal("the Python stub sent a payload of " + std::to_string(sizes.payload_size) +
                    " bytes, more than can be allocated");
  }
  NEREID_RETURN_IF_ERROR(ReadExact(frame.payload, deadline));
  return frame;
}

void StubProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

void StubProcess::WaitOrKill(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return;
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  Kill();
}

}  // namespace nereid::backends::python
