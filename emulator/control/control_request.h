// One control-socket request line, parsed once. A request is read for a
// handful of fields by the dispatcher, a view and a test hook; parsing the
// line again for each field made the control path (and its fuzz target)
// spend most of its time in the JSON lexer.
#ifndef ROCEMU_EMULATOR_CONTROL_CONTROL_REQUEST_H_
#define ROCEMU_EMULATOR_CONTROL_CONTROL_REQUEST_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace rocemu::emulator {

class ControlRequest {
 public:
  // A line that is not one JSON object reads as an object with no field.
  explicit ControlRequest(std::string_view line);

  // Whether the line is a JSON object.
  bool is_object() const { return doc_.is_object(); }
  // Whether the object has a top-level field `key`, of any type.
  bool Has(std::string_view key) const;
  // A top-level string field; "" when absent or of another type.
  std::string String(std::string_view key) const;
  // A top-level boolean field; false (and *value untouched) otherwise.
  bool Bool(std::string_view key, bool* value) const;
  // A top-level integer field in [0, 2^64); false (and *value untouched)
  // when absent, negative, fractional, too large or of another type.
  bool Uint(std::string_view key, uint64_t* value) const;

 private:
  // The field's value, or nullptr when absent (or not an object).
  const nlohmann::json* Find(std::string_view key) const;
  nlohmann::json doc_;
};

// One-field reads of a whole line (each parses it): for callers that
// read a single field.
std::string JsonStringField(std::string_view json, std::string_view key);
bool JsonBoolField(std::string_view json, std::string_view key, bool* value);
bool JsonUintField(std::string_view json, std::string_view key,
                   uint64_t* value);
bool JsonHasField(std::string_view json, std::string_view key);

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_CONTROL_CONTROL_REQUEST_H_
