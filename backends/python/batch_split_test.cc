#include "python/batch_split.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>

namespace nereid::backends::python {
namespace {

using ::testing::HasSubstr;

class RecordingAllocator final : public backend::OutputAllocator {
 public:
  bool IsRequested(std::string_view) const override { return true; }
  StatusOr<std::span<char>> Allocate(std::string_view name, DataType,
                                     std::span<const int64_t> shape, size_t byte_size) override {
    shapes[std::string(name)].assign(shape.begin(), shape.end());
    std::string& buf = data[std::string(name)];
    buf.resize(byte_size);
    return std::span<char>(buf.data(), buf.size());
  }
  std::map<std::string, std::vector<int64_t>> shapes;
  std::map<std::string, std::string> data;
};

TEST(BatchSplit, SlicesFixedSizeInputsByRows) {
  const int32_t values[] = {1, 2, 3, 4, 5, 6};
  const int64_t shape[] = {3, 2};
  const backend::TensorRef inputs[] = {
      {"IN", DataType::kInt32, shape,
       std::span<const char>(reinterpret_cast<const char*>(values), sizeof(values))}};
  backend::RequestInfo infos[2];
  infos[0].id = "a";
  infos[0].batch_size = 1;
  infos[1].id = "b";
  infos[1].batch_size = 2;
  std::deque<std::vector<int64_t>> shapes;
  const std::vector<std::string> requested{"OUT"};
  std::vector<RequestHeader> r = SplitRequests(inputs, infos, requested, &shapes);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].id, "a");
  EXPECT_EQ(r[0].inputs[0].data.size(), 8u);
  EXPECT_EQ(r[1].inputs[0].shape[0], 2);
  EXPECT_EQ(r[1].inputs[0].data.size(), 16u);
  EXPECT_EQ(r[1].requested_outputs, requested);
}

TEST(BatchSplit, SlicesBytesInputsByElements) {
  std::string data;
  for (std::string s : {"x", "yy", "zzz"}) {
    const uint32_t n = static_cast<uint32_t>(s.size());
    data.append(reinterpret_cast<const char*>(&n), 4);
    data += s;
  }
  const int64_t shape[] = {3};
  const backend::TensorRef inputs[] = {{"S", DataType::kBytes, shape, data}};
  backend::RequestInfo infos[2];
  infos[0].batch_size = 2;
  infos[1].batch_size = 1;
  std::deque<std::vector<int64_t>> shapes;
  std::vector<RequestHeader> r = SplitRequests(inputs, infos, {}, &shapes);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].inputs[0].data.size(), 4u + 1 + 4 + 2);
  EXPECT_EQ(r[1].inputs[0].data.size(), 4u + 3);
}

TEST(BatchSplit, KeepsOneRequestWhenRowsDoNotAddUp) {
  const int64_t shape[] = {5};
  const char data[20] = {};
  const backend::TensorRef inputs[] = {{"R", DataType::kInt32, shape, data}};
  backend::RequestInfo infos[2];
  infos[0].batch_size = 1;
  infos[1].batch_size = 1;
  std::deque<std::vector<int64_t>> shapes;
  std::vector<RequestHeader> r = SplitRequests(inputs, infos, {}, &shapes);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].inputs[0].data.size(), 20u);
}

TEST(BatchSplit, GathersOutputsFromThePayloadAndThePool) {
  const std::string payload = "AAAA";
  const std::string pool = "xxxxPPPPQQQQ";
  StubResponse a, b;
  a.outputs = {{"OUT", DataType::kInt32, {1, 1}, 0, 4}};
  b.outputs = {{"OUT", DataType::kInt32, {2, 1}, 4, 8, /*in_pool=*/true}};
  const StubResponse responses[] = {a, b};
  const RequestHeader requests[2];
  const int64_t rows[] = {1, 2};
  RecordingAllocator out;
  ASSERT_TRUE(GatherOutputs(responses, payload, pool, requests, rows, &out).ok());
  EXPECT_EQ(out.data["OUT"], "AAAAPPPPQQQQ");
}

TEST(BatchSplit, GathersOutputsInRequestOrder) {
  const std::string payload = "AAAABBBBCCCC";
  StubResponse a, b;
  a.outputs = {{"OUT", DataType::kInt32, {1, 1}, 8, 4}};
  b.outputs = {{"OUT", DataType::kInt32, {2, 1}, 0, 8}};
  const StubResponse responses[] = {a, b};
  const RequestHeader requests[2];
  const int64_t rows[] = {1, 2};
  RecordingAllocator out;
  ASSERT_TRUE(GatherOutputs(responses, payload, {}, requests, rows, &out).ok());
  EXPECT_EQ(out.data["OUT"], "CCCCAAAABBBB");
  EXPECT_EQ(out.shapes["OUT"], (std::vector<int64_t>{3, 1}));
}

TEST(BatchSplit, RefusesWrongRowsAndErrors) {
  const std::string payload = "AAAABBBB";
  StubResponse a, b;
  a.outputs = {{"OUT", DataType::kInt32, {1}, 0, 4}};
  b.outputs = {{"OUT", DataType::kInt32, {1}, 4, 4}};
  const StubResponse responses[] = {a, b};
  const RequestHeader requests[2];
  const int64_t rows[] = {1, 2};
  RecordingAllocator out;
  Status s = GatherOutputs(responses, payload, {}, requests, rows, &out);
  EXPECT_THAT(std::string(s.message()), HasSubstr("has 1 rows, the request has 2"));
  StubResponse failed;
  failed.has_error = true;
  failed.error = {"boom", 3};
  const StubResponse with_error[] = {a, failed};
  s = GatherOutputs(with_error, payload, {}, requests, rows, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "boom");
}

TEST(BatchSplit, ErrorResponseFailsOnlyItsRequest) {
  const std::string payload = "AAAABBBBCCCC";
  StubResponse a, failed, c;
  a.outputs = {{"OUT", DataType::kInt32, {1}, 0, 4}};
  failed.has_error = true;
  failed.error = {"boom", 3};
  failed.outputs = {{"OUT", DataType::kInt32, {5}, 4, 4}};  // ignored, as in Triton
  c.outputs = {{"OUT", DataType::kInt32, {1}, 8, 4}};
  const StubResponse responses[] = {failed, a, c};
  const RequestHeader requests[3];
  const int64_t rows[] = {1, 1, 1};
  RecordingAllocator out;
  Status errors[3];
  ASSERT_TRUE(GatherOutputs(responses, payload, {}, requests, rows, &out, errors).ok());
  EXPECT_EQ(errors[0].code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(errors[0].message(), "boom");
  EXPECT_TRUE(errors[1].ok());
  EXPECT_TRUE(errors[2].ok());
  EXPECT_EQ(out.data["OUT"], "AAAACCCC");
  EXPECT_EQ(out.shapes["OUT"], (std::vector<int64_t>{2}));
}

TEST(BatchSplit, EveryResponseFailedWritesNoOutputs) {
  StubResponse failed;
  failed.has_error = true;
  failed.error = {"gone", 5};
  const StubResponse responses[] = {failed, failed};
  const RequestHeader requests[2];
  const int64_t rows[] = {1, 1};
  RecordingAllocator out;
  Status errors[2];
  ASSERT_TRUE(GatherOutputs(responses, {}, {}, requests, rows, &out, errors).ok());
  EXPECT_FALSE(errors[0].ok());
  EXPECT_EQ(errors[1].message(), "gone");
  EXPECT_TRUE(out.data.empty());
}

// A rescheduled request (backend API v7) has no rows and no error: it runs again later.
TEST(BatchSplit, RescheduledRequestHasNoRows) {
  const std::string payload = "AAAACCCC";
  StubResponse a, rescheduled, c;
  a.outputs = {{"OUT", DataType::kInt32, {1}, 0, 4}};
  c.outputs = {{"OUT", DataType::kInt32, {1}, 4, 4}};
  const StubResponse responses[] = {a, rescheduled, c};
  const RequestHeader requests[3];
  const int64_t rows[] = {1, 1, 1};
  const uint32_t flags[] = {backend::kReleaseAll, backend::kReleaseReschedule,
                            backend::kReleaseAll};
  RecordingAllocator out;
  Status errors[3];
  ASSERT_TRUE(GatherOutputs(responses, payload, {}, requests, rows, &out, errors, flags).ok());
  for (const Status& e : errors) EXPECT_TRUE(e.ok());
  EXPECT_EQ(out.data["OUT"], "AAAACCCC");
  EXPECT_EQ(out.shapes["OUT"], (std::vector<int64_t>{2}));
}

}  // namespace
}  // namespace nereid::backends::python
