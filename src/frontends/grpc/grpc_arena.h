// Protobuf messages of the gRPC frontend allocated on an arena whose first block lives inside the
// owning object, so that parsing a request or building a reply of the usual size takes no heap
// allocation per field (without it a one-input ModelInferRequest took ~10 and its reply ~9:
// every string field, repeated field and sub-message is a block of its own). Tensor bytes longer
// than std::string's inline buffer stay heap strings, moved in and out, never copied. A message
// that outgrows the first block takes more blocks from the heap (protobuf's arena growth).
//
// Ownership: an ArenaMessage owns its message (destroyed with the arena); NewModelInferRequest's
// shared_ptr keeps the arena alive while anything references the message.
// Thread-safety: as the message's (protobuf's arena itself is thread-safe).
#pragma once

#include <google/protobuf/arena.h>

#include <cstddef>
#include <memory>
#include <optional>

namespace inference {
class ModelInferRequest;
}  // namespace inference

namespace nereid {

// A message of type `Message` on an arena whose first `kBlockBytes` are part of this object.
// Not copyable or movable (the arena points into it).
template <typename Message, size_t kBlockBytes>
class ArenaMessage {
 public:
  ArenaMessage()
      : arena_(block_, sizeof(block_)),
        message_(google::protobuf::Arena::CreateMessage<Message>(&arena_)) {}
  ArenaMessage(const ArenaMessage&) = delete;
  ArenaMessage& operator=(const ArenaMessage&) = delete;

  Message* get() const { return message_; }
  Message& operator*() const { return *message_; }
  Message* operator->() const { return message_; }

 private:
  alignas(std::max_align_t) char block_[kBlockBytes];  // constructed before arena_ uses it
  google::protobuf::Arena arena_;
  Message* message_;
};

// An ArenaMessage made on first use, for a reply built on another thread than the one that owns
// this object (an executor finishing a call the completion-queue thread created): protobuf's
// arena gives the first block to the thread that constructed it and every other thread a block of
// its own from the heap, so the arena is constructed by the thread that fills the message.
// Not thread-safe: the first get() must happen before any other thread's (a call's reply is
// built by one thread, then handed to gRPC).
template <typename Message, size_t kBlockBytes>
class LazyArenaMessage {
 public:
  Message* get() {
    if (!message_) message_.emplace();
    return message_->get();
  }
  Message& operator*() { return *get(); }
  Message* operator->() { return get(); }

 private:
  std::optional<ArenaMessage<Message, kBlockBytes>> message_;
};

// The first block of a request's arena: a one-input request of bench/grpc_bench.py's shape uses
// 640 bytes of it, plus the arena's own bookkeeping (grpc_arena_test.cc). The whole holder stays
// within glibc's per-thread cache sizes (1,032 bytes), so it is one cached allocation.
inline constexpr size_t kRequestArenaBlockBytes = 960;
// The first block of a reply's arena (inside the call or the stream's response slot): the reply to
// that request uses ~700 bytes as a ModelInferResponse, ~830 as a ModelStreamInferResponse.
inline constexpr size_t kResponseArenaBlockBytes = 1280;

// An empty ModelInferRequest on an arena of its own (one heap allocation for both), to read a
// call's request into. The returned pointer shares ownership of the arena.
std::shared_ptr<inference::ModelInferRequest> NewModelInferRequest();

}  // namespace nereid
