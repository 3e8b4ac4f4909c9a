#include "frontends/http/http_loop_watch.h"

#include <sys/epoll.h>
#include <unistd.h>

namespace nereid {
namespace http_detail {

LoopWatch::LoopWatch() : epoll_fd_(epoll_create1(EPOLL_CLOEXEC)) {}

LoopWatch::~LoopWatch() {
  if (epoll_fd_ >= 0) close(epoll_fd_);
}

bool LoopWatch::Add(int fd) const {
  if (epoll_fd_ < 0) return false;
  epoll_event event{};
  event.events = EPOLLIN | EPOLLRDHUP;  // level-triggered: readable for as long as bytes wait
  event.data.fd = fd;
  return epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) == 0;
}

bool LoopWatch::OthersWaiting() const {
  if (epoll_fd_ < 0) return false;
  epoll_event event;
  return epoll_wait(epoll_fd_, &event, 1, 0) > 0;
}

}  // namespace http_detail
}  // namespace nereid
