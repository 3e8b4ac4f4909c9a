// One event loop per HTTP I/O thread: which loop a connection gets, and that everything for a
// connection (its handler, a reply sent from another thread, replies of a CompletionBatch) runs
// on that loop's thread.
#include "frontends/http/http_io_loops.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "common/completion_batch.h"
#include "frontends/http/http_test_client.h"

namespace nereid {
namespace {

using http_detail::IoLoops;
using http_detail::LoopLoad;
using http_detail::LoopSeat;
using http_detail::PickLoop;
using namespace testing_http;  // NOLINT: Client, Reply, Post

std::vector<LoopLoad> Open(std::initializer_list<size_t> open) {
  std::vector<LoopLoad> loads;
  for (size_t n : open) loads.push_back({n, false});
  return loads;
}

TEST(PickLoopTest, EqualLoadsGoRoundRobin) {
  const std::vector<LoopLoad> idle = Open({0, 0, 0});
  size_t next = 0;
  EXPECT_EQ(PickLoop(idle, &next), 0u);
  EXPECT_EQ(PickLoop(idle, &next), 1u);
  EXPECT_EQ(PickLoop(idle, &next), 2u);
  EXPECT_EQ(PickLoop(idle, &next), 0u);
}

TEST(PickLoopTest, TheLeastLoadedLoopWins) {
  size_t next = 0;
  EXPECT_EQ(PickLoop(Open({5, 3, 4}), &next), 1u);
  EXPECT_EQ(next, 2u);
  EXPECT_EQ(PickLoop(Open({5, 3, 1}), &next), 2u);
  EXPECT_EQ(next, 0u);
  // Ties after the cursor: the first at or after it.
  next = 2;
  EXPECT_EQ(PickLoop(Open({1, 1, 1, 2}), &next), 2u);
  EXPECT_EQ(PickLoop(Open({1, 1, 2, 2}), &next), 0u);
}

TEST(PickLoopTest, ABusyLoopIsPassedOverUnlessAllAre) {
  size_t next = 0;
  // Loop 0 runs a handler (a model inline): the new connection goes to a loop free to read it,
  // even one with more connections.
  EXPECT_EQ(PickLoop({{0, true}, {3, false}, {2, false}}, &next), 2u);
  EXPECT_EQ(PickLoop({{0, true}, {3, false}, {4, true}}, &next), 1u);
  // All busy: the least loaded as usual.
  next = 0;
  EXPECT_EQ(PickLoop({{2, true}, {1, true}}, &next), 1u);
}

TEST(PickLoopTest, OneLoop) {
  size_t next = 7;
  EXPECT_EQ(PickLoop(Open({9}), &next), 0u);
  EXPECT_EQ(next, 0u);
  EXPECT_EQ(PickLoop({{9, true}}, &next), 0u);
}

TEST(IoLoopsTest, AssignCountsUntilTheSeatIsGone) {
  IoLoops loops(2);
  ASSERT_EQ(loops.size(), 2u);
  LoopSeat a = loops.Assign();
  LoopSeat b = loops.Assign();
  EXPECT_NE(a.index(), b.index());
  EXPECT_EQ(loops.open(0), 1u);
  EXPECT_EQ(loops.open(1), 1u);
  { LoopSeat gone = std::move(a); }
  EXPECT_EQ(loops.open(0) + loops.open(1), 1u);
  // The emptied loop gets the next connection.
  const size_t emptied = loops.open(0) == 0 ? 0 : 1;
  LoopSeat c = loops.Assign();
  EXPECT_EQ(c.index(), emptied);
  LoopSeat d = loops.Assign();
  LoopSeat e = loops.Assign();
  EXPECT_NE(d.index(), e.index());
  EXPECT_EQ(loops.open(0), 2u);
  EXPECT_EQ(loops.open(1), 2u);
  // A loop marked busy by one of its connections gets no new one until it is free again.
  d.SetBusy(true);
  EXPECT_TRUE(loops.busy(d.index()));
  LoopSeat f = loops.Assign();
  LoopSeat g = loops.Assign();
  EXPECT_NE(f.index(), d.index());
  EXPECT_NE(g.index(), d.index());
  d.SetBusy(false);
  EXPECT_EQ(loops.Assign().index(), d.index());
}

TEST(IoLoopsTest, EachLoopRunsOnItsOwnThread) {
  IoLoops loops(3);
  loops.Start("test-io");
  std::set<std::thread::id> threads;
  for (size_t i = 0; i < loops.size(); ++i) {
    std::promise<std::pair<std::thread::id, bool>> ran;
    boost::asio::post(loops.loop(i), [&, i] {
      bool only_this = true;
      for (size_t j = 0; j < loops.size(); ++j) {
        if (j != i && loops.loop(j).get_executor().running_in_this_thread()) only_this = false;
      }
      ran.set_value({std::this_thread::get_id(),
                     only_this && loops.loop(i).get_executor().running_in_this_thread()});
    });
    auto [id, on_own_loop] = ran.get_future().get();
    EXPECT_TRUE(on_own_loop) << "loop " << i;
    EXPECT_NE(id, std::this_thread::get_id());
    threads.insert(id);
  }
  EXPECT_EQ(threads.size(), 3u);
  loops.Stop();
  EXPECT_TRUE(loops.stopped());
}

TEST(IoLoopsTest, StopDropsWhatIsStillQueuedAndJoins) {
  IoLoops loops(2);
  loops.Start("test-io");
  auto seat = std::make_shared<LoopSeat>(loops.Assign());
  loops.Stop();
  // Posted after the stop: never runs, and destroying the loops releases what it held.
  bool ran = false;
  boost::asio::post(loops.loop(seat->index()), [&ran, seat] { ran = true; });
  seat.reset();
  EXPECT_FALSE(ran);
}

// Records, per connection (its first request's body), the threads its handler and its reply
// builder ran on.
struct ThreadLog {
  std::mutex mu;
  std::map<std::string, std::set<std::thread::id>> handler, reply;
};

HttpServerOptions Options(int threads) {
  HttpServerOptions o;
  o.address = "127.0.0.1";
  o.port = 0;
  o.thread_count = threads;
  return o;
}

TEST(HttpIoLoopsServerTest, ConnectionsAreSpreadAndRepliesComeBackToTheirLoop) {
  constexpr int kThreads = 3;
  constexpr int kClients = 6;
  ThreadLog log;
  auto created = HttpServer::Create(
      Options(kThreads), [&log](HttpRequest& r, std::shared_ptr<HttpResponder> responder) {
        const std::string who(r.Path().substr(1));
        {
          std::lock_guard<std::mutex> lock(log.mu);
          log.handler[who].insert(std::this_thread::get_id());
        }
        // Answered from another thread: the reply is built on the connection's loop.
        std::thread([&log, who, responder = std::move(responder)] {
          responder->SendDeferred([&log, who] {
            std::lock_guard<std::mutex> lock(log.mu);
            log.reply[who].insert(std::this_thread::get_id());
            HttpResponse resp = HttpResponse::Empty(200);
            resp.body.Append(who);
            return resp;
          });
        }).detach();
      });
  ASSERT_TRUE(created.ok()) << created.status().message();
  std::unique_ptr<HttpServer> server = std::move(created).value();
  ASSERT_TRUE(server->Start().ok());
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < kClients; ++i) clients.push_back(std::make_unique<Client>(server->port()));
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < kClients; ++i) clients[i]->Send(Get("/c" + std::to_string(i)));
    for (int i = 0; i < kClients; ++i) {
      Reply r = clients[i]->Read();
      EXPECT_EQ(r.status, 200);
      EXPECT_EQ(r.body, "c" + std::to_string(i));
    }
  }
  std::lock_guard<std::mutex> lock(log.mu);
  std::map<std::thread::id, int> per_thread;
  for (int i = 0; i < kClients; ++i) {
    const std::string who = "c" + std::to_string(i);
    ASSERT_EQ(log.handler[who].size(), 1u) << who << " was served by more than one thread";
    EXPECT_EQ(log.reply[who], log.handler[who]) << who << "'s reply left its loop";
    ++per_thread[*log.handler[who].begin()];
  }
  // Six connections at once over three loops: two each.
  ASSERT_EQ(per_thread.size(), static_cast<size_t>(kThreads));
  for (const auto& [id, n] : per_thread) EXPECT_EQ(n, kClients / kThreads);
}

TEST(HttpIoLoopsServerTest, ACompletionBatchRepliesOnEachConnectionsOwnLoop) {
  constexpr int kClients = 4;
  std::mutex mu;
  std::condition_variable all_held;
  std::vector<std::pair<std::thread::id, std::shared_ptr<HttpResponder>>> held;
  std::vector<std::pair<std::thread::id, std::thread::id>> seen;  // handler's, builder's
  auto created =
      HttpServer::Create(Options(2), [&](HttpRequest&, std::shared_ptr<HttpResponder> responder) {
        std::lock_guard<std::mutex> lock(mu);
        held.emplace_back(std::this_thread::get_id(), std::move(responder));
        all_held.notify_all();
      });
  ASSERT_TRUE(created.ok()) << created.status().message();
  std::unique_ptr<HttpServer> server = std::move(created).value();
  ASSERT_TRUE(server->Start().ok());
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<Client>(server->port()));
    clients.back()->Send(Post("/p", "x"));
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(
        all_held.wait_for(lock, std::chrono::seconds(5), [&] { return held.size() == kClients; }));
  }
  std::thread executor([&] {
    CompletionBatch batch;
    for (auto& entry : held) {  // (no structured binding: clang 14 cannot capture one)
      entry.second->SendDeferred([&, id = entry.first] {
        std::lock_guard<std::mutex> lock(mu);
        seen.emplace_back(id, std::this_thread::get_id());
        return HttpResponse::Json(200, "{}");
      });
      entry.second.reset();
    }
  });
  executor.join();
  for (auto& c : clients) EXPECT_EQ(c->Read().status, 200);
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(seen.size(), static_cast<size_t>(kClients));
  std::set<std::thread::id> loops;
  for (const auto& [handler_thread, builder_thread] : seen) {
    EXPECT_EQ(handler_thread, builder_thread);
    loops.insert(handler_thread);
  }
  EXPECT_EQ(loops.size(), 2u);  // the batch went to both loops
}

// A server whose handler answers every path with the path, but holds its loop on "/hold" until
// Release() (as a model run inline does). Hold() sends "/hold" and returns once it is held.
class HeldLoopServer {
 public:
  explicit HeldLoopServer(int threads) {
    auto created = HttpServer::Create(
        Options(threads),
        [this, released = released_](HttpRequest& r, std::shared_ptr<HttpResponder> responder) {
          if (r.Path() == "/hold") {
            holding_.set_value();
            released.wait();
          }
          HttpResponse resp = HttpResponse::Empty(200);
          resp.body.Append(std::string(r.Path()));
          responder->Send(std::move(resp));
        });
    EXPECT_TRUE(created.ok()) << created.status().message();
    if (!created.ok()) return;
    server_ = std::move(created).value();
    EXPECT_TRUE(server_->Start().ok());
  }
  ~HeldLoopServer() { Release(); }

  HttpServer& server() { return *server_; }
  std::unique_ptr<Client> Hold() {
    auto held = std::make_unique<Client>(server_->port());
    held->Send(Get("/hold"));
    holding_.get_future().wait();
    return held;
  }
  void Release() {
    if (!released_set_) release_.set_value();
    released_set_ = true;
  }

 private:
  std::promise<void> release_;
  std::shared_future<void> released_ = release_.get_future().share();
  bool released_set_ = false;
  std::promise<void> holding_;
  std::unique_ptr<HttpServer> server_;  // stopped first: its handler uses the promises
};

// A handler that holds its loop stops neither accepting nor serving new connections: every loop
// accepts, and new connections go to loops not inside a handler.
TEST(HttpIoLoopsServerTest, ALoopHeldByAHandlerLeavesNewConnectionsToTheOthers) {
  HeldLoopServer s(2);
  std::unique_ptr<Client> held = s.Hold();
  for (int i = 0; i < 4; ++i) {
    Client c(s.server().port());
    c.Send(Get("/free" + std::to_string(i)));
    Reply r = c.Read();
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "/free" + std::to_string(i));
  }
  s.Release();
  EXPECT_EQ(held->Read().body, "/hold");
}

// StopAccepting() does not wait for a loop busy in a handler (a model run inline may take long):
// the port refuses new clients at once, and the held request is still answered.
TEST(HttpIoLoopsServerTest, StopAcceptingDoesNotWaitForABusyLoop) {
  HeldLoopServer s(1);
  std::unique_ptr<Client> held = s.Hold();
  auto stopped = std::async(std::launch::async, [&] { s.server().StopAccepting(); });
  const bool returned = stopped.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
  EXPECT_TRUE(returned) << "StopAccepting waited for the busy loop";
  bool connected = true;
  const int fd = ConnectLoopback(s.server().port(), &connected);
  close(fd);
  EXPECT_FALSE(connected) << "the port still accepts connections";
  s.Release();
  stopped.wait();
  EXPECT_EQ(held->Read().body, "/hold");
  EXPECT_TRUE(s.server().Stop(std::chrono::seconds(5)));
}

}  // namespace
}  // namespace nereid
