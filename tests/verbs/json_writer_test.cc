// verbs::AppendJsonString and verbs::JsonList: the one JSON escaper and list
// opener behind rocemu-ctl, the session server's and the daemon's state JSON.
#include "verbs/json_writer.h"

#include <string>

#include "gtest/gtest.h"

namespace rocemu::verbs {
namespace {

TEST(JsonWriterTest, QuotesAndEscapes) {
  // An embedded NUL must not end the string.
  constexpr char kIn[] = "a\"b\\c\n\x01 \xc3\xa9\0z";
  std::string out;
  AppendJsonString(std::string_view(kIn, sizeof(kIn) - 1), &out);
  // Quote and backslash escaped, control bytes as \u00XX, UTF-8 kept as is.
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\u000a\\u0001 \xc3\xa9\\u0000z\"");
}

TEST(JsonWriterTest, EmptyStringIsTwoQuotes) {
  std::string out = "x";
  AppendJsonString("", &out);
  EXPECT_EQ(out, "x\"\"");
}

TEST(JsonWriterTest, ListSeparatesElementsAndCloses) {
  std::string out = "{";
  {
    JsonList l(&out, "qps");
    for (int i = 1; i <= 3; ++i) l.Next()->append(std::to_string(i));
  }
  out.push_back(',');
  { JsonList empty(&out, "ahs"); }
  out.push_back('}');
  EXPECT_EQ(out, "{\"qps\":[1,2,3],\"ahs\":[]}");
}

}  // namespace
}  // namespace rocemu::verbs
