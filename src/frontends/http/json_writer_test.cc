#include "frontends/http/json_writer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace nereid {
namespace {

using namespace std::string_literals;

// Writes the same document with JsonWriter and with RapidJSON's own writer: every string is a
// key, an object member's value, an array element and, last, the root of a document of its own.
template <typename Writer>
std::string Document(const std::vector<std::string>& strings) {
  std::string out;
  StringOutputStream stream(&out);
  Writer w(stream);
  w.StartObject();
  for (const std::string& s : strings) {
    w.Key(s.data(), static_cast<rapidjson::SizeType>(s.size()));
    w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  }
  w.Key("list");
  w.StartArray();
  for (const std::string& s : strings)
    w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  w.Int(7);
  w.EndArray();
  w.EndObject();
  for (const std::string& s : strings) {
    Writer root(stream);
    root.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  }
  return out;
}

TEST(JsonWriter, WritesWhatRapidJsonWrites) {
  const std::vector<std::string> strings = {"",
                                            "model_name",
                                            "FP32",
                                            "1",
                                            "with \"quotes\"",
                                            "back\\slash",
                                            "tab\there",
                                            "line\nend",
                                            "nul\0in"s,
                                            "\x1f\x7f",
                                            "caf\xc3\xa9 \xe2\x82\xac",
                                            "\xff\xfe not UTF-8",
                                            "/slash/"};
  const std::string ours = Document<JsonWriter>(strings);
  EXPECT_EQ(ours, Document<JsonWriterBase>(strings));
  EXPECT_NE(ours.find(R"("with \"quotes\"")"), std::string::npos) << ours;
  EXPECT_NE(ours.find(R"("nul\u0000in")"), std::string::npos) << ours;
}

TEST(JsonWriter, PlainStringsAreThoseWithNothingToEscape) {
  EXPECT_TRUE(IsPlainJsonString(""));
  EXPECT_TRUE(IsPlainJsonString("identity_fp32 caf\xc3\xa9 \x7f /"));
  EXPECT_FALSE(IsPlainJsonString("a\"b"));
  EXPECT_FALSE(IsPlainJsonString("a\\b"));
  EXPECT_FALSE(IsPlainJsonString(std::string_view("a\0b", 3)));
  EXPECT_FALSE(IsPlainJsonString("a\x1f"));
}

TEST(JsonWriter, TheThreadWriterUsesThePlainPath) {
  std::string out;
  StringOutputStream stream(&out);
  JsonWriter& w = ThreadJsonWriter(stream);
  w.StartObject();
  WriteJsonKey(w, "name");
  WriteJsonString(w, "a\"b");
  WriteJsonKey(w, "datatype");
  WriteJsonString(w, "FP32");
  w.EndObject();
  EXPECT_EQ(out, R"({"name":"a\"b","datatype":"FP32"})");
}

}  // namespace
}  // namespace nereid
