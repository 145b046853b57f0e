// verbs::DumpJson (its escaping of strings) and the rounding helpers: the one
// JSON serializer behind rocemu-ctl, rocemu-decode, rocemu-perf and the session
// server's and the daemon's state JSON.
#include "verbs/server/json_writer.h"

#include <string>

#include "gtest/gtest.h"

namespace rocemu::verbs {
namespace {

std::string Escape(std::string_view s) {
  return DumpJson(nlohmann::json(std::string(s)));
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

TEST(JsonWriterTest, EmptyStringIsTwoQuotes) { EXPECT_EQ(Escape(""), "\"\""); }

TEST(JsonWriterTest, DumpKeepsInsertionOrderOnOneLine) {
  nlohmann::ordered_json j = {{"z", 1}, {"a", {1, 2}}, {"m", nullptr}};
  j["b"] = "x\xff";
  EXPECT_EQ(DumpJson(j),
            "{\"z\":1,\"a\":[1,2],\"m\":null,\"b\":\"x\xef\xbf\xbd\"}");
  // Plain nlohmann::json sorts its keys; the replacement is the same.
  EXPECT_EQ(DumpJson(nlohmann::json{{"k", "\xc3"}}),
            "{\"k\":\"\xef\xbf\xbd\"}");
}

TEST(JsonWriterTest, RoundedNumbersPrintAsPrintfWould) {
  EXPECT_EQ(DumpJson(nlohmann::json(RoundToDecimals(12.3456789, 3))), "12.346");
  EXPECT_EQ(DumpJson(nlohmann::json(RoundToDecimals(0.0000004, 6))), "0.0");
  EXPECT_EQ(DumpJson(nlohmann::json(RoundToSignificant(0.000123456789, 6))),
            "0.000123457");
  EXPECT_EQ(DumpJson(nlohmann::json(RoundToSignificant(98765.4321, 9))),
            "98765.4321");
}

}  // namespace
}  // namespace rocemu::verbs
