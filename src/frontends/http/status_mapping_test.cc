#include "frontends/http/status_mapping.h"

#include <gtest/gtest.h>

namespace nereid {
namespace {

TEST(StatusMappingTest, MapsEveryCode) {
  EXPECT_EQ(HttpStatusFromStatus(Status::Ok()), 200);
  EXPECT_EQ(HttpStatusFromStatus(Internal("x")), 500);
  EXPECT_EQ(HttpStatusFromStatus(NotFound("x")), 404);
  EXPECT_EQ(HttpStatusFromStatus(Unavailable("x")), 503);
  EXPECT_EQ(HttpStatusFromStatus(Unsupported("x")), 501);
  EXPECT_EQ(HttpStatusFromStatus(Status(StatusCode::kPermissionDenied, "x")), 403);
  EXPECT_EQ(HttpStatusFromStatus(InvalidArgument("x")), 400);
  EXPECT_EQ(HttpStatusFromStatus(UnknownError("x")), 400);
  EXPECT_EQ(HttpStatusFromStatus(AlreadyExists("x")), 400);
  EXPECT_EQ(HttpStatusFromStatus(Status(StatusCode::kCancelled, "x")), 400);
}

TEST(StatusMappingTest, ErrorBodyIsEscapedJson) {
  EXPECT_EQ(ErrorJson("plain"), R"({"error":"plain"})");
  EXPECT_EQ(ErrorJson("quote \" back \\ nl \n tab \t ctl \x01"),
            R"({"error":"quote \" back \\ nl \n tab \t ctl \u0001"})");
}

TEST(StatusMappingTest, ErrorResponseCarriesCodeAndContentType) {
  HttpResponse r = ErrorResponse(NotFound("Request for unknown model: 'm' is not found"));
  EXPECT_EQ(r.status, 404);
  ASSERT_NE(r.headers.Find("content-type"), nullptr);
  EXPECT_EQ(*r.headers.Find("Content-Type"), "application/json");
  EXPECT_EQ(r.body.Flatten(), R"({"error":"Request for unknown model: 'm' is not found"})");
}

}  // namespace
}  // namespace nereid
