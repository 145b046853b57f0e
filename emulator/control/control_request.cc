#include "emulator/control/control_request.h"

namespace rocemu::emulator {

// Not JSON: a discarded value, which is not an object. nlohmann's lexer
// ends the input at a NUL byte, so a line such as {"cmd":"qps"}<NUL>anything
// would read as the object alone; a NUL is no JSON whitespace (RFC 8259),
// so such a line is not JSON.
ControlRequest::ControlRequest(std::string_view line)
    : doc_(line.find('\0') != std::string_view::npos
               ? nlohmann::json(nlohmann::json::value_t::discarded)
               : nlohmann::json::parse(line.begin(), line.end(), nullptr,
                                       /*allow_exceptions=*/false)) {}

const nlohmann::json* ControlRequest::Find(std::string_view key) const {
  if (!doc_.is_object()) return nullptr;
  auto it = doc_.find(key);
  return it == doc_.end() ? nullptr : &*it;
}

bool ControlRequest::Has(std::string_view key) const {
  return Find(key) != nullptr;
}

std::string ControlRequest::String(std::string_view key) const {
  const nlohmann::json* v = Find(key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

bool ControlRequest::Bool(std::string_view key, bool* value) const {
  const nlohmann::json* v = Find(key);
  if (v == nullptr || !v->is_boolean()) return false;
  *value = v->get<bool>();
  return true;
}

bool ControlRequest::Uint(std::string_view key, uint64_t* value) const {
  // nlohmann keeps non-negative integers that fit 64 bits as unsigned; a
  // larger one is a float, a negative one signed: neither is a count.
  const nlohmann::json* v = Find(key);
  if (v == nullptr || !v->is_number_unsigned()) return false;
  *value = v->get<uint64_t>();
  return true;
}

std::string JsonStringField(std::string_view json, std::string_view key) {
  return ControlRequest(json).String(key);
}

bool JsonBoolField(std::string_view json, std::string_view key, bool* value) {
  return ControlRequest(json).Bool(key, value);
}

bool JsonUintField(std::string_view json, std::string_view key,
                   uint64_t* value) {
  return ControlRequest(json).Uint(key, value);
}

bool JsonHasField(std::string_view json, std::string_view key) {
  return ControlRequest(json).Has(key);
}

}  // namespace rocemu::emulator
