// A parsed JSON document, for tools that read the daemon's control-socket
// replies (rocemu-ctl): nlohmann-json parses (strict: trailing garbage is
// an error), this keeps what the tables need. Objects keep their members in
// document order so that tables list counters the way the daemon names
// them, and numbers keep the text the daemon wrote (exact 64-bit counters).
// Nested values print back through nlohmann's dump() of the parsed node.
#ifndef ROCEMU_EMULATOR_TOOLS_JSON_VALUE_H_
#define ROCEMU_EMULATOR_TOOLS_JSON_VALUE_H_

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace rocemu::tools {

class JsonValue {
 public:
  enum class Kind : uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };

  static absl::StatusOr<JsonValue> Parse(std::string_view text);

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool is_object() const { return kind_ == Kind::kObject; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_number() const { return kind_ == Kind::kNumber; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_bool() const { return kind_ == Kind::kBool; }

  bool boolean() const { return bool_; }
  double number() const { return number_; }
  // Numbers as the daemon wrote them (exact for 64-bit counters); strings
  // unescaped; "true"/"false"/"null" for the rest.
  const std::string& text() const { return text_; }
  const std::vector<JsonValue>& items() const { return items_; }
  const std::vector<std::pair<std::string, JsonValue>>& members() const {
    return members_;
  }
  // The member `key` of an object, or a shared null value.
  const JsonValue& operator[](std::string_view key) const;
  // Scalars as text for tables ("-" for null), nested values as JSON.
  std::string ToString() const;

 private:
  friend class JsonParser;
  Kind kind_ = Kind::kNull;
  bool bool_ = false;
  double number_ = 0;
  std::string text_ = "null";
  std::vector<JsonValue> items_;
  std::vector<std::pair<std::string, JsonValue>> members_;
  // Arrays and objects: their node in the parsed document, which the
  // shared pointer keeps alive for every copy of the value.
  std::shared_ptr<const nlohmann::ordered_json> doc_;
  const nlohmann::ordered_json* node_ = nullptr;
};

}  // namespace rocemu::tools

#endif  // ROCEMU_EMULATOR_TOOLS_JSON_VALUE_H_
