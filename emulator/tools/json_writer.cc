#include "emulator/tools/json_writer.h"

#include <cinttypes>
#include <cstdio>

namespace rocemu::tools {

void AppendJsonString(std::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (char c : s) {
    const auto b = static_cast<unsigned char>(c);
    switch (b) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (b < 0x20 || b >= 0x80) {
          out->append("\\u00");
          out->push_back(kHex[b >> 4]);
          out->push_back(kHex[b & 0xF]);
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

void JsonWriter::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_.push_back(',');
    first_.back() = false;
  }
}

void JsonWriter::BeginObject() {
  BeforeValue();
  out_.push_back('{');
  first_.push_back(true);
}

void JsonWriter::EndObject() {
  out_.push_back('}');
  first_.pop_back();
}

void JsonWriter::BeginArray() {
  BeforeValue();
  out_.push_back('[');
  first_.push_back(true);
}

void JsonWriter::EndArray() {
  out_.push_back(']');
  first_.pop_back();
}

void JsonWriter::Key(std::string_view key) {
  BeforeValue();
  AppendJsonString(key, &out_);
  out_.push_back(':');
  after_key_ = true;
}

void JsonWriter::String(std::string_view v) {
  BeforeValue();
  AppendJsonString(v, &out_);
}

void JsonWriter::Uint(uint64_t v) {
  BeforeValue();
  char buf[24];
  const int n = std::snprintf(buf, sizeof(buf), "%" PRIu64, v);
  out_.append(buf, static_cast<size_t>(n));
}

void JsonWriter::Int(int64_t v) {
  BeforeValue();
  char buf[24];
  const int n = std::snprintf(buf, sizeof(buf), "%" PRId64, v);
  out_.append(buf, static_cast<size_t>(n));
}

void JsonWriter::Bool(bool v) {
  BeforeValue();
  out_.append(v ? "true" : "false");
}

void JsonWriter::Null() {
  BeforeValue();
  out_.append("null");
}

void JsonWriter::Clear() {
  out_.clear();
  first_.clear();
  after_key_ = false;
}

}  // namespace rocemu::tools
