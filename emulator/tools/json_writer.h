// A minimal streaming JSON writer: the commas and nesting of a stream that
// never holds a whole document. Strings go through the project's one escaper
// (verbs/server/json_writer.h, nlohmann-json's). Only rocemu-replay's summary
// still uses it; new code builds an nlohmann::ordered_json and prints it with
// verbs::DumpJson.
#ifndef ROCEMU_EMULATOR_TOOLS_JSON_WRITER_H_
#define ROCEMU_EMULATOR_TOOLS_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rocemu::tools {

class JsonWriter {
 public:
  void BeginObject();
  void EndObject();
  void BeginArray();
  void EndArray();
  // Inside an object every value is preceded by Key().
  void Key(std::string_view key);

  void String(std::string_view v);
  void Uint(uint64_t v);
  void Int(int64_t v);
  void Bool(bool v);
  void Null();

  // Key + value shorthands.
  void Field(std::string_view key, std::string_view v) {
    Key(key);
    String(v);
  }
  void Field(std::string_view key, const char* v) {
    Key(key);
    String(v);
  }
  void Field(std::string_view key, uint64_t v) {
    Key(key);
    Uint(v);
  }
  void Field(std::string_view key, uint32_t v) {
    Key(key);
    Uint(v);
  }
  void Field(std::string_view key, uint16_t v) {
    Key(key);
    Uint(v);
  }
  void Field(std::string_view key, uint8_t v) {
    Key(key);
    Uint(v);
  }
  void Field(std::string_view key, bool v) {
    Key(key);
    Bool(v);
  }

  const std::string& str() const { return out_; }
  void Clear();

 private:
  void BeforeValue();

  std::string out_;
  // One entry per open object/array: true until its first element is written.
  std::vector<bool> first_;
  bool after_key_ = false;
};

}  // namespace rocemu::tools

#endif  // ROCEMU_EMULATOR_TOOLS_JSON_WRITER_H_
