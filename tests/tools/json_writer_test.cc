#include "emulator/tools/json_writer.h"

#include <string>

#include "gtest/gtest.h"

namespace rocemu::tools {
namespace {

TEST(JsonWriterTest, NestedObjectsAndArrays) {
  JsonWriter w;
  w.BeginObject();
  w.Field("frame", uint64_t{1});
  w.Field("ok", true);
  w.Key("error");
  w.Null();
  w.Key("bth");
  w.BeginObject();
  w.Field("opcode", uint8_t{4});
  w.Field("opcode_name", "RC_SEND_ONLY");
  w.EndObject();
  w.Key("quanta");
  w.BeginArray();
  w.Uint(0);
  w.Uint(65535);
  w.EndArray();
  w.Key("delta");
  w.Int(-3);
  w.EndObject();
  EXPECT_EQ(w.str(),
            "{\"frame\":1,\"ok\":true,\"error\":null,\"bth\":{\"opcode\":4,"
            "\"opcode_name\":\"RC_SEND_ONLY\"},\"quanta\":[0,65535],"
            "\"delta\":-3}");
}

TEST(JsonWriterTest, ClearStartsAFreshDocument) {
  JsonWriter w;
  w.BeginObject();
  w.Field("a", uint32_t{1});
  w.EndObject();
  w.Clear();
  w.BeginObject();
  w.Field("b", uint64_t{18446744073709551615ull});
  w.EndObject();
  EXPECT_EQ(w.str(), "{\"b\":18446744073709551615}");
}

TEST(JsonWriterTest, EmptyContainers) {
  JsonWriter w;
  w.BeginArray();
  w.BeginObject();
  w.EndObject();
  w.BeginArray();
  w.EndArray();
  w.EndArray();
  EXPECT_EQ(w.str(), "[{},[]]");
}

}  // namespace
}  // namespace rocemu::tools
