#include "emulator/tools/json_writer.h"

#include <cinttypes>
#include <cstdio>

#include "verbs/server/json_writer.h"

namespace rocemu::tools {

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
  verbs::AppendJsonString(key, &out_);
  out_.push_back(':');
  after_key_ = true;
}

void JsonWriter::String(std::string_view v) {
  BeforeValue();
  verbs::AppendJsonString(v, &out_);
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
