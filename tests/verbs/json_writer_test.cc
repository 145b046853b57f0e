// verbs::AppendJsonString and verbs::JsonList: the one JSON escaper and list
// opener behind rocemu-ctl, the session server's and the daemon's state JSON.
#include "verbs/server/json_writer.h"

#include <string>

#include "gtest/gtest.h"

namespace rocemu::verbs {
namespace {

std::string Escape(std::string_view s) {
  std::string out;
  AppendJsonString(s, &out);
  return out;
}

TEST(JsonWriterTest, QuotesAndEscapes) {
  // An embedded NUL must not end the string.
  constexpr char kIn[] = "a\"b\\c\n\x01 \xc3\xa9\0z";
  // Quote and backslash escaped, control bytes escaped, UTF-8 kept as is.
  EXPECT_EQ(Escape(std::string_view(kIn, sizeof(kIn) - 1)),
            "\"a\\\"b\\\\c\\n\\u0001 \xc3\xa9\\u0000z\"");
}

TEST(JsonWriterTest, ShortEscapesForCommonControls) {
  EXPECT_EQ(Escape("\b\f\n\r\t"), "\"\\b\\f\\n\\r\\t\"");
  EXPECT_EQ(Escape(std::string_view("\x00\x1f", 2)), "\"\\u0000\\u001f\"");
  // 0x7f (DEL) needs no escaping in JSON.
  EXPECT_EQ(Escape("\x7f"), "\"\x7f\"");
}

TEST(JsonWriterTest, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  // A name or path from a config or a client: printed, never thrown on.
  EXPECT_EQ(Escape("a\xff\x80"
                   "b"),
            "\"a\xef\xbf\xbd\xef\xbf\xbd"
            "b\"");
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
