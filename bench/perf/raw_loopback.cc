// The floor for issue 21's large-tensor goal: the same bytes an identity inference moves (a
// request of N bytes in, N bytes back) over one loopback TCP connection, with nothing but
// send/recv on either side. Prints the round trip's p50/p90/p99.
//
// Usage: raw_loopback [--bytes N (16777216)] [--seconds S (3)] [--header BYTES (0)]
// --header adds that many bytes of a mock HTTP head in each direction, for a like-for-like count.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "perf_load.h"
#include "perf_stats.h"

namespace {

bool ReadExactly(int fd, char* buf, size_t n) {
  while (n > 0) {
    ssize_t r = ::recv(fd, buf, n, 0);
    if (r <= 0) return false;
    buf += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool WriteExactly(int fd, const char* buf, size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, buf, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    buf += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

void NoDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace

int main(int argc, char** argv) {
  size_t bytes = 16u << 20;
  double seconds = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--bytes")
      bytes = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--seconds")
      seconds = std::strtod(argv[i + 1], nullptr);
    else if (flag == "--header")
      bytes += std::strtoull(argv[i + 1], nullptr, 10);
    else {
      std::fprintf(stderr, "usage: raw_loopback [--bytes N] [--seconds S] [--header H]\n");
      return 1;
    }
  }
  int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(lfd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(lfd, 1) != 0 ||
      ::getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::perror("listen");
    return 1;
  }
  // Receiver: reads a whole request into its buffer, then sends it back (one copy each way in
  // user space, like a server that keeps the tensor in its receive buffer).
  std::thread receiver([lfd, bytes] {
    int fd = ::accept(lfd, nullptr, nullptr);
    NoDelay(fd);
    std::vector<char> buf(bytes);
    while (ReadExactly(fd, buf.data(), bytes) && WriteExactly(fd, buf.data(), bytes)) {
    }
    ::close(fd);
  });
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    std::perror("connect");
    return 1;
  }
  NoDelay(fd);
  std::vector<char> out(bytes, 1), in(bytes);
  std::vector<uint64_t> lat;
  uint64_t end = nereid::perf::NowNs() + static_cast<uint64_t>(seconds * 1e9);
  while (nereid::perf::NowNs() < end || lat.size() < 5) {
    uint64_t start = nereid::perf::NowNs();
    // The request is written by another thread while this one reads, as a client that streams
    // its body while the server streams back; without it a full socket buffer would deadlock.
    std::thread writer([&] { WriteExactly(fd, out.data(), bytes); });
    bool ok = ReadExactly(fd, in.data(), bytes);
    writer.join();
    if (!ok) return 1;
    lat.push_back(nereid::perf::NowNs() - start);
  }
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
  receiver.join();
  ::close(lfd);
  size_t n = lat.size();
  std::printf(
      "raw loopback: %zu bytes each way, %zu round trips, p50 %llu usec, p90 %llu usec, "
      "p99 %llu usec\n",
      bytes, n, static_cast<unsigned long long>(nereid::perf::Percentile(lat, 50) / 1000),
      static_cast<unsigned long long>(nereid::perf::Percentile(lat, 90) / 1000),
      static_cast<unsigned long long>(nereid::perf::Percentile(lat, 99) / 1000));
  return 0;
}
