#include "frontends/http/http_io_loops.h"

#include <algorithm>

#include "common/logging.h"
#include "common/thread_name.h"

namespace nereid {
namespace http_detail {

size_t PickLoop(const std::vector<LoopLoad>& loads, size_t* next) {
  const size_t n = loads.size();
  size_t best = *next % n;
  for (size_t k = 1; k < n; ++k) {
    const size_t i = (*next + k) % n;
    const LoopLoad& a = loads[i];
    const LoopLoad& b = loads[best];
    if (a.busy != b.busy ? !a.busy : a.open < b.open) best = i;
  }
  *next = (best + 1) % n;
  return best;
}

IoLoops::Loop::Loop() : ioc(BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO), work(ioc.get_executor()) {}

IoLoops::IoLoops(int count) {
  for (int i = 0; i < std::max(1, count); ++i) loops_.push_back(std::make_unique<Loop>());
}

IoLoops::~IoLoops() { Stop(); }

LoopSeat IoLoops::Assign() {
  std::vector<LoopLoad> loads(loops_.size());
  for (size_t i = 0; i < loops_.size(); ++i) loads[i] = {open(i), busy(i)};
  size_t index = 0;
  {
    MutexLock lock(mu_);
    index = PickLoop(loads, &next_);
  }
  loops_[index]->counters->open.fetch_add(1, std::memory_order_relaxed);
  return LoopSeat(loops_[index]->counters, index);
}

// An exception escaping a handler would end the thread (and, uncaught, the process): log it and
// keep serving. Connections catch what their parser throws themselves (Session::Parse).
void IoLoops::Run(boost::asio::io_context& ioc) {
  for (;;) {
    try {
      ioc.run();
      return;
    } catch (const std::exception& e) {
      LOG_ERROR("HTTP I/O thread caught an exception and keeps serving: {}", e.what());
    } catch (...) {
      LOG_ERROR("HTTP I/O thread caught an unknown exception and keeps serving");
    }
  }
}

void IoLoops::Start(const std::string& thread_name) {
  if (started_ || stopped()) return;
  started_ = true;
  for (auto& loop : loops_) {
    loop->thread = StartNamedThread(thread_name, [&ioc = loop->ioc] { Run(ioc); });
  }
}

void IoLoops::Stop() {
  if (stopped_.exchange(true, std::memory_order_acq_rel)) return;
  for (auto& loop : loops_) {
    loop->work.reset();
    loop->ioc.stop();
  }
  for (auto& loop : loops_) {
    if (loop->thread.joinable()) loop->thread.join();
  }
}

}  // namespace http_detail
}  // namespace nereid
