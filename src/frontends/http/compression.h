// HTTP content codings with zlib: request bodies in `Content-Encoding: gzip|deflate|identity`
// are inflated under the same size limit as plain bodies (so a small "zip bomb" cannot expand
// past it); responses are compressed when `Accept-Encoding` asks for gzip or deflate.
// "deflate" is the zlib format (RFC 1950) as Triton uses it. Stateless functions; thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "frontends/http/http_types.h"
#include "nereid/status.h"

namespace nereid {

enum class ContentCoding { kIdentity, kGzip, kDeflate };

std::string_view ContentCodingName(ContentCoding coding);

// The coding named by a Content-Encoding value (nullptr or empty: identity). Any other coding is
// Unsupported ("Unsupported compression type"), as in Triton.
StatusOr<ContentCoding> ParseContentEncoding(const std::string* header);

// The response coding for an Accept-Encoding value, Triton's way: the listed coding among
// identity / gzip / deflate with the highest q-value (the first on a tie); q=0 never wins;
// nullptr or nothing acceptable: identity.
ContentCoding ChooseResponseCoding(const std::string* accept_encoding);

// Inflates `data`. More than `max_size` output bytes, or corrupt/truncated input, is
// InvalidArgument. kIdentity is a precondition violation (returns Internal).
StatusOr<std::shared_ptr<std::string>> Decompress(ContentCoding coding, std::string_view data,
                                                  size_t max_size);

// Compresses the buffers of `body` as one stream.
StatusOr<std::string> Compress(ContentCoding coding, const HttpBody& body);

// Compresses `response`'s body in place and sets Content-Encoding, unless `coding` is identity
// or the body is empty. On a compression failure the response is left uncompressed, as Triton
// does.
void CompressResponse(ContentCoding coding, HttpResponse* response);

}  // namespace nereid
