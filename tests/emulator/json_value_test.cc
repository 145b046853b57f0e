#include "emulator/tools/json_value.h"

#include <string>

#include "gtest/gtest.h"

namespace rocemu::tools {
namespace {

TEST(JsonValueTest, ParsesWhatTheDaemonWrites) {
  absl::StatusOr<JsonValue> v = JsonValue::Parse(
      R"({"ports":[{"port":"tap0","n":18446744073709551615,"r":1.5,)"
      R"("ok":true,"off":false,"x":null,"s":"a\"b\\c\u0041\n"}], "e":{}})");
  ASSERT_TRUE(v.ok()) << v.status();
  const JsonValue& p = (*v)["ports"].items().at(0);
  EXPECT_EQ(p["port"].text(), "tap0");
  // 64-bit counters keep their exact digits.
  EXPECT_EQ(p["n"].text(), "18446744073709551615");
  EXPECT_DOUBLE_EQ(p["r"].number(), 1.5);
  EXPECT_TRUE(p["ok"].is_bool() && p["ok"].boolean());
  EXPECT_TRUE(p["off"].is_bool() && !p["off"].boolean());
  EXPECT_TRUE(p["x"].is_null());
  EXPECT_EQ(p["x"].ToString(), "-");
  EXPECT_EQ(p["s"].text(), "a\"b\\cA\n");
  EXPECT_TRUE(p["missing"].is_null());
  EXPECT_TRUE((*v)["e"].is_object());
  EXPECT_TRUE((*v)["e"].members().empty());
}

TEST(JsonValueTest, KeepsMemberOrderAndRoundTrips) {
  const std::string text = R"({"z":1,"a":[2,"x",{"k":null}],"m":"q\""})";
  absl::StatusOr<JsonValue> v = JsonValue::Parse(text);
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_EQ(v->members().size(), 3u);
  EXPECT_EQ(v->members()[0].first, "z");
  EXPECT_EQ(v->members()[1].first, "a");
  EXPECT_EQ(v->ToString(), text);
}

TEST(JsonValueTest, RejectsMalformedInput) {
  for (const char* bad : {"", "{", "[1,]", "{\"a\" 1}", "{\"a\":1} x", "\"open",
                          "tru", "{\"a\":\"\\q\"}", "[1 2]", "{1:2}", "-"}) {
    EXPECT_FALSE(JsonValue::Parse(bad).ok()) << bad;
  }
  // Nesting deeper than any daemon reply is refused, not recursed into.
  EXPECT_FALSE(JsonValue::Parse(std::string(200, '[')).ok());
  EXPECT_FALSE(
      JsonValue::Parse(std::string(200, '[') + std::string(200, ']')).ok());
  EXPECT_TRUE(
      JsonValue::Parse(std::string(60, '[') + std::string(60, ']')).ok());
}

}  // namespace
}  // namespace rocemu::tools
