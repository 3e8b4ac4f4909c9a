#include "frontends/http/json_reply_buffer.h"

#include <utility>

#include "common/block_recycler.h"
#include "core/request/inference_request.h"

namespace nereid {
namespace {

struct Spares {
  std::string strings[JsonReplyBuffer::kSparesPerThread];
  int count = 0;
  bool alive = true;  // false once the thread's exit destroyed it: strings are freed from then on
  ~Spares() { alive = false; }
};
thread_local Spares spares;

}  // namespace

JsonReplyBuffer::JsonReplyBuffer() {
  Spares& s = spares;
  if (s.alive && s.count > 0) {
    text = std::move(s.strings[--s.count]);
    text.clear();
  }
}

JsonReplyBuffer::~JsonReplyBuffer() {
  response.reset();
  Spares& s = spares;
  if (!s.alive || s.count == kSparesPerThread || text.capacity() > kMaxKeptBytes) return;
  s.strings[s.count++] = std::move(text);
}

int JsonReplyBuffer::SparesOnThisThread() { return spares.count; }

std::shared_ptr<JsonReplyBuffer> NewJsonReplyBuffer() {
  return std::allocate_shared<JsonReplyBuffer>(RecyclingAllocator<JsonReplyBuffer>());
}

}  // namespace nereid
