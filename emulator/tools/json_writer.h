// A minimal streaming JSON writer for one-object-per-line output (JSON Lines).
// Writing is all the tools need, so no JSON library is pulled in; the escaper
// is the only part where correctness is subtle and it is unit-tested.
#ifndef ROCEMU_EMULATOR_TOOLS_JSON_WRITER_H_
#define ROCEMU_EMULATOR_TOOLS_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rocemu::tools {

// Appends `s` to *out as a quoted JSON string. Bytes >= 0x80 are taken as
// Latin-1 and written as \u00XX so that the output is valid UTF-8 JSON for any
// input bytes.
void AppendJsonString(std::string_view s, std::string* out);

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
