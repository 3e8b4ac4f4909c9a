// The buffer an inference reply's JSON is written into, reused: a reply body keeps its buffer
// alive (HttpBody::KeepAlive) until the connection has written it, and giving it back puts its
// string, capacity and all, on the releasing thread's short list of spares, from which the next
// reply built on that thread takes it. The shared owner's block comes from the thread's block cache
// (common/block_recycler.h). So a steady stream of replies allocates nothing for its JSON (the
// string was one heap allocation per reply before).
//
// Thread-safety: a buffer is used by one thread at a time; taking and giving back touch only the
// calling thread's spares.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace nereid {

class InferenceResponse;

struct JsonReplyBuffer {
  static constexpr int kSparesPerThread = 4;
  static constexpr size_t kMaxKeptBytes = 64 * 1024;  // larger strings are freed, not kept

  JsonReplyBuffer();   // takes a spare string of this thread, if any (emptied)
  ~JsonReplyBuffer();  // gives `text` back to this thread's spares (or frees it)
  JsonReplyBuffer(const JsonReplyBuffer&) = delete;
  JsonReplyBuffer& operator=(const JsonReplyBuffer&) = delete;

  std::string text;
  // The response whose output bytes the reply body views (binary outputs): kept alive with the
  // JSON at no cost of its own, where a shared owner of its own was one allocation per reply.
  std::unique_ptr<const InferenceResponse> response;

  static int SparesOnThisThread();  // for tests
};

// A new buffer, shared so that a reply body can keep it alive (HttpBody::KeepAlive).
std::shared_ptr<JsonReplyBuffer> NewJsonReplyBuffer();

}  // namespace nereid
