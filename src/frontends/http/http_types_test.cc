#include "frontends/http/http_types.h"

#include <gtest/gtest.h>

namespace nereid {
namespace {

TEST(HttpHeadersTest, CountIgnoresCase) {
  HttpHeaders h;
  h.Add("Inference-Header-Content-Length", "10");
  h.Add("content-type", "application/json");
  h.Add("inference-header-content-length", "12");
  EXPECT_EQ(h.Count("Inference-Header-Content-Length"), 2u);
  EXPECT_EQ(h.Count("Content-Type"), 1u);
  EXPECT_EQ(h.Count("Accept"), 0u);
  EXPECT_EQ(*h.Find("INFERENCE-HEADER-CONTENT-LENGTH"), "10");
}

}  // namespace
}  // namespace nereid
