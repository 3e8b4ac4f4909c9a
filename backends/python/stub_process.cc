#include "python/stub_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "python/binary_codec.h"

extern char** environ;

namespace nereid::backends::python {
namespace {

constexpr int kChildFd = 3;
constexpr int kChildShmFd = 4;   // the pool's memfd, when there is one
constexpr int kChildBellFd = 5;  // the idle bell (an eventfd)

Status Dead(const std::string& what) { return Unavailable("stub process " + what); }

// A blocking recv on the stub socket returns after this long without data (SO_RCVTIMEO), so that
// a reader waits in one system call (no recv, poll, recv) yet sees its deadline pass.
constexpr auto kRecvSlice = std::chrono::milliseconds(100);

// After a recv that found no data (EAGAIN): false when `deadline` has passed.
bool BeforeDeadline(std::chrono::steady_clock::time_point deadline) {
  return deadline == std::chrono::steady_clock::time_point::max() ||
         std::chrono::steady_clock::now() < deadline;
}

}  // namespace

std::vector<std::string> StubEnvironment(const StubCommand& command, char** parent) {
  std::vector<std::string> env;
  std::string pythonpath = "PYTHONPATH=" + command.resources;
  std::string path = "PATH=";
  const bool venv = !command.execution_env.empty();
  if (venv) path += command.execution_env + "/bin";
  bool had_path = false;
  for (char** e = parent; *e != nullptr; ++e) {
    const std::string_view var(*e);
    if (var.starts_with("PYTHONPATH=")) {
      pythonpath += ":" + std::string(var.substr(11));
    } else if (var.starts_with("NEREID_EXECUTION_ENV=")) {
      // only what the model's configuration says
    } else if (venv && var.starts_with("PATH=")) {
      path += ":" + std::string(var.substr(5));
      had_path = true;
    } else if (venv && (var.starts_with("VIRTUAL_ENV=") || var.starts_with("PYTHONHOME="))) {
      // activate sets VIRTUAL_ENV and unsets PYTHONHOME
    } else {
      env.emplace_back(var);
    }
  }
  env.push_back(pythonpath);
  if (venv) {
    if (!had_path) path += ":/usr/bin:/bin";
    env.push_back(path);
    env.push_back("VIRTUAL_ENV=" + command.execution_env);
    env.push_back("NEREID_EXECUTION_ENV=" + command.execution_env);
  }
  return env;
}

StatusOr<std::unique_ptr<StubProcess>> StubProcess::Start(const StubCommand& command) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return Internal(std::string("unable to create the stub socket: ") + std::strerror(errno));
  }
  std::vector<std::string> env_strings = StubEnvironment(command, environ);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  // The stub inherits this thread's CPUs: on one CPU, a spin would only delay it.
  StatusOr<std::chrono::nanoseconds> spin =
      SpinBudget(getenv(kSpinVariable), MayRunOnSeveralCpus());
  if (!spin.ok()) {
    close(fds[0]);
    close(fds[1]);
    return spin.status();
  }
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
  const timeval slice{0, static_cast<suseconds_t>(std::chrono::microseconds(kRecvSlice).count())};
  if (setsockopt(fds[0], SOL_SOCKET, SO_RCVTIMEO, &slice, sizeof(slice)) != 0) {
    const int err = errno;
    close(fds[0]);
    close(fds[1]);
    return Internal(std::string("unable to prepare the stub's descriptors: ") + std::strerror(err));
  }
  std::string fd_arg = std::to_string(kChildFd);
  std::string shm_arg = pool != nullptr ? std::to_string(kChildShmFd) : "-1";
  std::string bell_arg = std::to_string(kChildBellFd);
  std::string python = command.python, script = command.script, model = command.model_file;
  std::string no_site_user = "-s";
  char* argv[] = {python.data(), no_site_user.data(), script.data(),   fd_arg.data(),
                  model.data(),  shm_arg.data(),      bell_arg.data(), nullptr};
  // The child's file actions dup2 the socket onto kChildFd, the pool onto kChildShmFd and the
  // bell onto kChildBellFd. A source that already is one of those numbers (the pool's memfd may
  // get fd 3 when the server has just closed it) would be overwritten by an earlier dup2, and the
  // stub would map its socket (ENODEV). So every source is first copied above kChildBellFd.
  const int bell_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  const int sock_src = fcntl(fds[1], F_DUPFD_CLOEXEC, kChildBellFd + 1);
  const int pool_src = pool != nullptr ? fcntl(pool->fd(), F_DUPFD_CLOEXEC, kChildBellFd + 1) : -2;
  const int bell_src = bell_fd >= 0 ? fcntl(bell_fd, F_DUPFD_CLOEXEC, kChildBellFd + 1) : -1;
  close(fds[1]);
  if (sock_src < 0 || pool_src == -1 || bell_src < 0) {
    const int err = errno;
    for (int fd : {sock_src, pool_src, bell_src, bell_fd}) {
      if (fd >= 0) close(fd);
    }
    close(fds[0]);
    return Internal(std::string("unable to prepare the stub's descriptors: ") + std::strerror(err));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, sock_src, kChildFd);
  if (pool != nullptr) posix_spawn_file_actions_adddup2(&actions, pool_src, kChildShmFd);
  posix_spawn_file_actions_adddup2(&actions, bell_src, kChildBellFd);
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
  close(sock_src);
  if (pool_src >= 0) close(pool_src);
  close(bell_src);
  if (rc != 0) {
    close(fds[0]);
    close(bell_fd);
    return Internal("unable to start the Python stub '" + command.python +
                    "': " + std::strerror(rc));
  }
  return std::unique_ptr<StubProcess>(
      new StubProcess(pid, fds[0], bell_fd, std::move(pool), *spin));
}

StubProcess::~StubProcess() {
  Kill();
  if (fd_ >= 0) close(fd_);
  if (bell_fd_ >= 0) close(bell_fd_);
}

uint64_t StubProcess::RingCount() {
  uint64_t count = 0;
  if (read(bell_fd_, &count, sizeof(count)) != static_cast<ssize_t>(sizeof(count))) return 0;
  return count;
}

Status StubProcess::WriteBinary(std::string* header, size_t slot,
                                std::span<const std::span<const char>> chunks) {
  if (pool_ == nullptr || !use_pool_ || chunks.empty() || header->size() < slot + 24) {
    return Send(*header, chunks);
  }
  StatusOr<ShmBlock> block = pool_->Put(chunks);
  if (!block.ok()) return Send(*header, chunks);  // the pool cannot grow: the socket carries them
  written_.push_back(block->offset);
  const uint64_t place[3] = {block->offset, block->size, pool_->size()};
  for (int i = 0; i < 3; ++i) PutLe(header->data() + slot + 8 * i, place[i], 8);
  return Send(*header, {});
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
  if (const std::chrono::nanoseconds spin = spin_.Next(); spin.count() > 0) {
    const ssize_t n = SpinRecv(fd_, rbuf_.data() + rend_, rbuf_.size() - rend_, spin);
    if (n > 0) {
      spin_.Hit();
      rend_ += static_cast<size_t>(n);
      return Status::Ok();
    }
    if (n == 0) return Dead("exited");
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return Dead(std::string("read failed: ") + std::strerror(errno));
    }
    spin_.Miss();
  }
  while (true) {
    const ssize_t n = recv(fd_, rbuf_.data() + rend_, rbuf_.size() - rend_, 0);
    if (n > 0) {
      rend_ += static_cast<size_t>(n);
      return Status::Ok();
    }
    if (n == 0) return Dead("exited");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return Dead(std::string("read failed: ") + std::strerror(errno));
    }
    if (!BeforeDeadline(deadline)) return Dead("timed out");
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
    const ssize_t n = recv(fd_, out.data() + got, out.size() - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return Dead("exited");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return Dead(std::string("read failed: ") + std::strerror(errno));
    }
    if (!BeforeDeadline(deadline)) return Dead("timed out");
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

Status StubProcess::ReadHeader(FrameSizes* sizes, std::chrono::steady_clock::time_point deadline,
                               std::string* header) {
  std::array<char, kFrameHeaderSize> raw;
  NEREID_RETURN_IF_ERROR(ReadExact(raw, deadline));
  NEREID_ASSIGN_OR_RETURN(*sizes, DecodeFrameHeader(raw));
  header->resize(sizes->json_size);
  return ReadExact(*header, deadline);
}

StatusOr<Frame> StubProcess::Read(std::chrono::steady_clock::time_point deadline) {
  FrameSizes sizes;
  Frame frame;
  NEREID_RETURN_IF_ERROR(ReadHeader(&sizes, deadline, &frame.json));
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
