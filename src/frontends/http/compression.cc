#include "frontends/http/compression.h"

#include <zlib.h>

#include <algorithm>
#include <cstdlib>

namespace nereid {
namespace {

constexpr size_t kMaxZlibChunk = size_t{1} << 30;  // avail_in/avail_out are 32-bit

int WindowBits(ContentCoding coding) { return coding == ContentCoding::kGzip ? 16 + 15 : 15; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// inflateEnd/deflateEnd on scope exit.
struct InflateGuard {
  z_stream* zs;
  ~InflateGuard() { inflateEnd(zs); }
};
struct DeflateGuard {
  z_stream* zs;
  ~DeflateGuard() { deflateEnd(zs); }
};

Status TooLarge(size_t max_size) {
  return InvalidArgument("Decompressed request size exceeds the maximum allowed value of " +
                         std::to_string(max_size) +
                         " bytes. Use --http-max-input-size to increase the limit.");
}

Status Corrupt(const z_stream& zs) {
  return InvalidArgument(std::string("failed to decompress the request body: ") +
                         (zs.msg != nullptr ? zs.msg : "truncated or corrupt data"));
}

}  // namespace

std::string_view ContentCodingName(ContentCoding coding) {
  switch (coding) {
    case ContentCoding::kIdentity:
      return "identity";
    case ContentCoding::kGzip:
      return "gzip";
    case ContentCoding::kDeflate:
      return "deflate";
  }
  return "identity";
}

StatusOr<ContentCoding> ParseContentEncoding(const std::string* header) {
  if (header == nullptr) return ContentCoding::kIdentity;
  const std::string_view v = Trim(*header);
  if (v.empty() || EqualsIgnoreCase(v, "identity")) return ContentCoding::kIdentity;
  if (EqualsIgnoreCase(v, "gzip")) return ContentCoding::kGzip;
  if (EqualsIgnoreCase(v, "deflate")) return ContentCoding::kDeflate;
  return Unsupported("Unsupported compression type");
}

ContentCoding ChooseResponseCoding(const std::string* accept_encoding) {
  ContentCoding best = ContentCoding::kIdentity;
  if (accept_encoding == nullptr) return best;
  double best_weight = 0;
  std::string_view rest(*accept_encoding);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t semi = item.find(';');
    const std::string_view type = Trim(item.substr(0, semi));
    double weight = 1;
    if (semi != std::string_view::npos) {
      const std::string_view param = Trim(item.substr(semi + 1));
      if (param.size() < 2 || (param[0] != 'q' && param[0] != 'Q') || param[1] != '=') continue;
      const std::string number(param.substr(2));
      char* end = nullptr;
      weight = std::strtod(number.c_str(), &end);
      if (end == number.c_str()) continue;
    }
    ContentCoding coding;
    if (EqualsIgnoreCase(type, "gzip")) {
      coding = ContentCoding::kGzip;
    } else if (EqualsIgnoreCase(type, "deflate")) {
      coding = ContentCoding::kDeflate;
    } else if (EqualsIgnoreCase(type, "identity")) {
      coding = ContentCoding::kIdentity;
    } else {
      continue;
    }
    if (weight > best_weight) {
      best = coding;
      best_weight = weight;
    }
  }
  return best;
}

StatusOr<std::shared_ptr<std::string>> Decompress(ContentCoding coding, std::string_view data,
                                                  size_t max_size) {
  if (coding == ContentCoding::kIdentity) return Internal("Decompress called for identity");
  z_stream zs{};
  if (inflateInit2(&zs, WindowBits(coding)) != Z_OK) return Internal("inflateInit2 failed");
  InflateGuard guard{&zs};
  auto out = std::make_shared<std::string>();
  // One byte over the limit tells "too large" from "exactly the limit".
  const size_t cap = max_size == SIZE_MAX ? max_size : max_size + 1;
  out->resize(std::min(cap, std::max<size_t>(data.size() * 4, 4096)));
  size_t in_pos = 0;
  size_t produced = 0;
  while (true) {
    if (produced == out->size()) {
      if (out->size() >= cap) return TooLarge(max_size);
      out->resize(std::min(cap, out->size() * 2));
    }
    const size_t in_chunk = std::min(data.size() - in_pos, kMaxZlibChunk);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + in_pos));
    zs.avail_in = static_cast<uInt>(in_chunk);
    zs.next_out = reinterpret_cast<Bytef*>(out->data() + produced);
    zs.avail_out = static_cast<uInt>(std::min(out->size() - produced, kMaxZlibChunk));
    const uInt out_before = zs.avail_out;
    const int ret = inflate(&zs, Z_NO_FLUSH);
    in_pos += in_chunk - zs.avail_in;
    produced += out_before - zs.avail_out;
    if (produced > max_size) return TooLarge(max_size);
    if (ret == Z_STREAM_END) {
      if (in_pos == data.size()) break;
      // gzip allows concatenated members; anything else after the end is corrupt.
      if (coding != ContentCoding::kGzip || inflateReset(&zs) != Z_OK) return Corrupt(zs);
      continue;
    }
    if (ret == Z_BUF_ERROR && in_pos == data.size() && zs.avail_out > 0) return Corrupt(zs);
    if (ret != Z_OK && ret != Z_BUF_ERROR) return Corrupt(zs);
  }
  out->resize(produced);
  return out;
}

StatusOr<std::string> Compress(ContentCoding coding, const HttpBody& body) {
  if (coding == ContentCoding::kIdentity) return Internal("Compress called for identity");
  z_stream zs{};
  // Level 1: tensor data compresses poorly, so speed matters more than the last few percent.
  if (deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, WindowBits(coding), 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    return Internal("deflateInit2 failed");
  }
  DeflateGuard guard{&zs};
  std::string out;
  out.resize(deflateBound(&zs, static_cast<uLong>(body.size())) + 64);
  size_t produced = 0;
  Status status;
  auto pump = [&](std::string_view in, int flush) {
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    zs.avail_in = static_cast<uInt>(in.size());
    while (true) {
      if (produced == out.size()) out.resize(out.size() * 2);
      zs.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
      zs.avail_out = static_cast<uInt>(std::min(out.size() - produced, kMaxZlibChunk));
      const uInt before = zs.avail_out;
      const int ret = deflate(&zs, flush);
      produced += before - zs.avail_out;
      if (ret == Z_STREAM_END) return;
      if (ret != Z_OK && ret != Z_BUF_ERROR) {
        status = Internal("deflate failed");
        return;
      }
      if (flush == Z_NO_FLUSH && zs.avail_in == 0) return;
    }
  };
  body.ForEachBuffer([&](std::string_view v) {
    for (size_t pos = 0; pos < v.size() && status.ok(); pos += kMaxZlibChunk) {
      pump(v.substr(pos, kMaxZlibChunk), Z_NO_FLUSH);
    }
  });
  if (status.ok()) pump(std::string_view(), Z_FINISH);
  if (!status.ok()) return status;
  out.resize(produced);
  return out;
}

void CompressResponse(ContentCoding coding, HttpResponse* response) {
  if (coding == ContentCoding::kIdentity || response->body.empty()) return;
  StatusOr<std::string> compressed = Compress(coding, response->body);
  if (!compressed.ok()) return;
  response->body.Clear();
  response->body.Append(std::move(compressed).value());
  response->headers.Set("Content-Encoding", std::string(ContentCodingName(coding)));
}

}  // namespace nereid
