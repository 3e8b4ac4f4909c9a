// The body type of a connection's request parser (http_session.h): Beast's string_body, except
// that a received piece is appended rather than copied into a zero-filled resize, and that a
// Content-Length of kDirectBodyBytes or more is not reserved, because the session reads such a
// body itself, straight into a buffer of its final size (Session::StartDirectBody).
#pragma once

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/buffers_range.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/optional.hpp>
#include <cstddef>
#include <cstdint>
#include <string>

namespace nereid {
namespace http_detail {

// Bodies with a Content-Length of at least this many bytes bypass the parser.
constexpr size_t kDirectBodyBytes = 64 * 1024;
// ... and from this size on their buffer comes from LargeBufferPool::ForBodies()
// (http_session_buffers.h), smaller ones from the heap.
constexpr size_t kPooledBodyBytes = 1024 * 1024;

struct SessionBody {
  using value_type = std::string;

  static std::uint64_t size(const value_type& body) { return body.size(); }

  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(boost::beast::http::header<isRequest, Fields>&, value_type& body) : body_(body) {}

    void init(const boost::optional<std::uint64_t>& length, boost::beast::error_code& ec) {
      ec = {};
      if (length && *length < kDirectBodyBytes) body_.reserve(static_cast<size_t>(*length));
    }

    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, boost::beast::error_code& ec) {
      const std::size_t n = boost::asio::buffer_size(buffers);
      if (n > body_.max_size() - body_.size()) {
        ec = boost::beast::http::error::buffer_overflow;
        return 0;
      }
      ec = {};
      for (const auto b : boost::beast::buffers_range_ref(buffers)) {
        body_.append(static_cast<const char*>(b.data()), b.size());
      }
      return n;
    }

    void finish(boost::beast::error_code& ec) { ec = {}; }

   private:
    value_type& body_;
  };
};

}  // namespace http_detail
}  // namespace nereid
