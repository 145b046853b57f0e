#include "emulator/tools/json_value.h"

#include <charconv>
#include <cstdlib>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "verbs/json_writer.h"

namespace rocemu::tools {

class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : s_(text) {}

  absl::StatusOr<JsonValue> Document() {
    JsonValue v;
    if (absl::Status st = Value(&v, 0); !st.ok()) return st;
    SkipSpace();
    if (pos_ != s_.size()) return Error("trailing characters");
    return v;
  }

 private:
  // Deeper nesting than the daemon ever writes is refused, not recursed.
  static constexpr int kMaxDepth = 64;

  absl::Status Error(std::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrFormat("JSON: %s at offset %d", what, pos_));
  }
  void SkipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' ||
                                s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool Literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  absl::Status Value(JsonValue* v, int depth) {
    if (depth > kMaxDepth) return Error("nesting too deep");
    SkipSpace();
    if (pos_ >= s_.size()) return Error("unexpected end");
    const char c = s_[pos_];
    if (c == '{') return Object(v, depth);
    if (c == '[') return Array(v, depth);
    if (c == '"') {
      v->kind_ = JsonValue::Kind::kString;
      return String(&v->text_);
    }
    for (const bool b : {true, false}) {
      if (Literal(b ? "true" : "false")) {
        v->kind_ = JsonValue::Kind::kBool;
        v->bool_ = b;
        v->text_ = b ? "true" : "false";
        return absl::OkStatus();
      }
    }
    if (Literal("null")) return absl::OkStatus();
    return Number(v);
  }

  absl::Status Number(JsonValue* v) {
    const size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    while (pos_ < s_.size() &&
           ((s_[pos_] >= '0' && s_[pos_] <= '9') || s_[pos_] == '.' ||
            s_[pos_] == 'e' || s_[pos_] == 'E' || s_[pos_] == '+' ||
            s_[pos_] == '-')) {
      ++pos_;
    }
    if (pos_ == start) return Error("unexpected character");
    std::string text(s_.substr(start, pos_ - start));
    char* end = nullptr;
    double d = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size()) return Error("bad number");
    v->kind_ = JsonValue::Kind::kNumber;
    v->number_ = d;
    v->text_ = std::move(text);
    return absl::OkStatus();
  }

  absl::Status String(std::string* out) {
    ++pos_;  // the opening quote
    out->clear();
    while (pos_ < s_.size()) {
      const char c = s_[pos_++];
      if (c == '"') return absl::OkStatus();
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (pos_ >= s_.size()) break;
      const char e = s_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out->push_back(e);
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'u': {
          unsigned cp = 0;
          if (pos_ + 4 > s_.size()) return Error("short \\u escape");
          auto [p, ec] =
              std::from_chars(s_.data() + pos_, s_.data() + pos_ + 4, cp, 16);
          if (ec != std::errc() || p != s_.data() + pos_ + 4) {
            return Error("bad \\u escape");
          }
          pos_ += 4;
          // UTF-8; surrogate pairs are not needed for the daemon's output.
          if (cp < 0x80) {
            out->push_back(static_cast<char>(cp));
          } else if (cp < 0x800) {
            out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
            out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
          } else {
            out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
            out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
          }
          break;
        }
        default:
          return Error("bad escape");
      }
    }
    return Error("unterminated string");
  }

  absl::Status Array(JsonValue* v, int depth) {
    ++pos_;
    v->kind_ = JsonValue::Kind::kArray;
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return absl::OkStatus();
    }
    for (;;) {
      JsonValue item;
      if (absl::Status st = Value(&item, depth + 1); !st.ok()) return st;
      v->items_.push_back(std::move(item));
      SkipSpace();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == ']') {
        ++pos_;
        return absl::OkStatus();
      }
      return Error("expected , or ]");
    }
  }

  absl::Status Object(JsonValue* v, int depth) {
    ++pos_;
    v->kind_ = JsonValue::Kind::kObject;
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return absl::OkStatus();
    }
    for (;;) {
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_] != '"') return Error("expected a key");
      std::string key;
      if (absl::Status st = String(&key); !st.ok()) return st;
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_] != ':') return Error("expected :");
      ++pos_;
      JsonValue member;
      if (absl::Status st = Value(&member, depth + 1); !st.ok()) return st;
      v->members_.emplace_back(std::move(key), std::move(member));
      SkipSpace();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == '}') {
        ++pos_;
        return absl::OkStatus();
      }
      return Error("expected , or }");
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
};

absl::StatusOr<JsonValue> JsonValue::Parse(std::string_view text) {
  return JsonParser(text).Document();
}

const JsonValue& JsonValue::operator[](std::string_view key) const {
  static const JsonValue* const kNull = new JsonValue();
  for (const auto& [k, v] : members_) {
    if (k == key) return v;
  }
  return *kNull;
}

namespace {

void Write(const JsonValue& v, std::string* out) {
  switch (v.kind()) {
    case JsonValue::Kind::kString:
      verbs::AppendJsonString(v.text(), out);
      return;
    case JsonValue::Kind::kArray: {
      out->push_back('[');
      bool first = true;
      for (const JsonValue& i : v.items()) {
        if (!first) out->push_back(',');
        first = false;
        Write(i, out);
      }
      out->push_back(']');
      return;
    }
    case JsonValue::Kind::kObject: {
      out->push_back('{');
      bool first = true;
      for (const auto& [k, m] : v.members()) {
        if (!first) out->push_back(',');
        first = false;
        verbs::AppendJsonString(k, out);
        out->push_back(':');
        Write(m, out);
      }
      out->push_back('}');
      return;
    }
    default:
      out->append(v.text());
  }
}

}  // namespace

std::string JsonValue::ToString() const {
  if (kind_ == Kind::kNull) return "-";
  if (kind_ == Kind::kArray || kind_ == Kind::kObject) {
    std::string out;
    Write(*this, &out);
    return out;
  }
  return text_;
}

}  // namespace rocemu::tools
