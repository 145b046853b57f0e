// A second JSON reader, written for the control fuzzer from RFC 8259 (and
// RFC 3629 for UTF-8) alone. The daemon's field readers sit on nlohmann-json;
// checking them against nlohmann again would only check nlohmann against
// itself, so the fuzzer compares them with this independent implementation.
//
// Where the RFC leaves a choice to the implementation, this reader makes
// the one the control protocol documents:
//  - a UTF-8 byte order mark before the text is ignored (RFC 8259 8.1);
//  - a number whose value is beyond the range of a double makes the text
//    invalid (RFC 8259 6 lets implementations limit the range);
//  - of duplicate member names, the last one counts (RFC 8259 4 leaves it
//    unpredictable).
#ifndef ROCEMU_TESTS_FUZZ_REFERENCE_JSON_H_
#define ROCEMU_TESTS_FUZZ_REFERENCE_JSON_H_

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

namespace rocemu::fuzz {

struct RefValue {
  enum class Kind { kString, kUnsigned, kBool, kOther };
  Kind kind = Kind::kOther;
  std::string str;    // kString, decoded
  uint64_t num = 0;   // kUnsigned: an integer in [0, 2^64)
  bool flag = false;  // kBool
};

class RefJson {
 public:
  // The top-level member `key` of `text` when the text is exactly one JSON
  // object (whitespace around it allowed); nullopt otherwise.
  static std::optional<RefValue> Member(std::string_view text,
                                        std::string_view key) {
    RefJson p(text);
    if (p.t_.substr(0, 3) == "\xEF\xBB\xBF") p.i_ = 3;
    p.Ws();
    std::optional<RefValue> found;
    if (p.Peek() != '{' || !p.Object(&key, &found)) return std::nullopt;
    p.Ws();
    if (p.i_ != p.t_.size()) return std::nullopt;
    return found;
  }

 private:
  explicit RefJson(std::string_view t) : t_(t) {}

  int Peek() const {
    return i_ < t_.size() ? static_cast<unsigned char>(t_[i_]) : -1;
  }
  void Ws() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' ||
                              t_[i_] == '\n' || t_[i_] == '\r')) {
      ++i_;
    }
  }

  // Any value; `out` (may be null) receives what Member reports of it.
  bool Value(RefValue* out) {
    RefValue v;
    switch (Peek()) {
      case '{':
        if (!Object(nullptr, nullptr)) return false;
        break;
      case '[':
        if (!Array()) return false;
        break;
      case '"':
        v.kind = RefValue::Kind::kString;
        if (!String(&v.str)) return false;
        break;
      case 't':
      case 'f':
        v.kind = RefValue::Kind::kBool;
        v.flag = Peek() == 't';
        if (!Literal(v.flag ? "true" : "false")) return false;
        break;
      case 'n':
        if (!Literal("null")) return false;
        break;
      default:
        if (!Number(&v)) return false;
    }
    if (out != nullptr) *out = std::move(v);
    return true;
  }

  // An object at i_ ('{'). With `key`, records the last member of that
  // name in *found.
  bool Object(const std::string_view* key, std::optional<RefValue>* found) {
    ++i_;
    Ws();
    if (Peek() == '}') {
      ++i_;
      return true;
    }
    for (;;) {
      Ws();
      std::string name;
      if (Peek() != '"' || !String(&name)) return false;
      Ws();
      if (Peek() != ':') return false;
      ++i_;
      Ws();
      RefValue v;
      if (!Value(&v)) return false;
      if (key != nullptr && name == *key) *found = std::move(v);
      Ws();
      if (Peek() == ',') {
        ++i_;
        continue;
      }
      if (Peek() != '}') return false;
      ++i_;
      return true;
    }
  }

  bool Array() {
    ++i_;
    Ws();
    if (Peek() == ']') {
      ++i_;
      return true;
    }
    for (;;) {
      Ws();
      if (!Value(nullptr)) return false;
      Ws();
      if (Peek() == ',') {
        ++i_;
        continue;
      }
      if (Peek() != ']') return false;
      ++i_;
      return true;
    }
  }

  bool Literal(std::string_view lit) {
    if (t_.substr(i_, lit.size()) != lit) return false;
    i_ += lit.size();
    return true;
  }

  static int HexDigit(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  // Four hex digits at i_ (after "\u").
  bool Hex4(uint32_t* v) {
    *v = 0;
    for (int k = 0; k < 4; ++k) {
      const int d = HexDigit(Peek());
      if (d < 0) return false;
      *v = *v << 4 | static_cast<uint32_t>(d);
      ++i_;
    }
    return true;
  }
  static void AppendUtf8(uint32_t cp, std::string* s) {
    if (cp < 0x80) {
      s->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      s->push_back(static_cast<char>(0xC0 | cp >> 6));
      s->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      s->push_back(static_cast<char>(0xE0 | cp >> 12));
      s->push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
      s->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      s->push_back(static_cast<char>(0xF0 | cp >> 18));
      s->push_back(static_cast<char>(0x80 | (cp >> 12 & 0x3F)));
      s->push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
      s->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  // One well-formed UTF-8 sequence (RFC 3629 table) at i_, copied to s.
  bool Utf8Sequence(std::string* s) {
    const int b0 = Peek();
    int n = 0;
    int lo = 0x80, hi = 0xBF;  // range of the second byte
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      n = 1;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      n = 2;
      if (b0 == 0xE0) lo = 0xA0;
      if (b0 == 0xED) hi = 0x9F;  // no UTF-16 surrogates
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      n = 3;
      if (b0 == 0xF0) lo = 0x90;
      if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
    } else {
      return false;
    }
    const size_t start = i_++;
    for (int k = 0; k < n; ++k) {
      const int b = Peek();
      const int l = k == 0 ? lo : 0x80, h = k == 0 ? hi : 0xBF;
      if (b < l || b > h) return false;
      ++i_;
    }
    s->append(t_.substr(start, n + 1));
    return true;
  }

  // A string at i_ ('"'), decoded into *s.
  bool String(std::string* s) {
    ++i_;
    for (;;) {
      const int c = Peek();
      if (c < 0 || c < 0x20) return false;  // unterminated or control
      if (c == '"') {
        ++i_;
        return true;
      }
      if (c >= 0x80) {
        if (!Utf8Sequence(s)) return false;
        continue;
      }
      ++i_;
      if (c != '\\') {
        s->push_back(static_cast<char>(c));
        continue;
      }
      const int e = Peek();
      ++i_;
      switch (e) {
        case '"':
        case '\\':
        case '/':
          s->push_back(static_cast<char>(e));
          break;
        case 'b':
          s->push_back('\b');
          break;
        case 'f':
          s->push_back('\f');
          break;
        case 'n':
          s->push_back('\n');
          break;
        case 'r':
          s->push_back('\r');
          break;
        case 't':
          s->push_back('\t');
          break;
        case 'u': {
          uint32_t cp;
          if (!Hex4(&cp)) return false;
          if (cp >= 0xDC00 && cp <= 0xDFFF) return false;  // lone low half
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t low;
            if (!Literal("\\u") || !Hex4(&low) || low < 0xDC00 ||
                low > 0xDFFF) {
              return false;
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          AppendUtf8(cp, s);
          break;
        }
        default:
          return false;
      }
    }
  }

  static bool Digit(int c) { return c >= '0' && c <= '9'; }

  bool Number(RefValue* v) {
    const size_t start = i_;
    bool integer = true, negative = false;
    if (Peek() == '-') {
      negative = true;
      ++i_;
    }
    if (Peek() == '0') {
      ++i_;
    } else if (Digit(Peek())) {
      while (Digit(Peek())) ++i_;
    } else {
      return false;
    }
    if (Peek() == '.') {
      integer = false;
      ++i_;
      if (!Digit(Peek())) return false;
      while (Digit(Peek())) ++i_;
    }
    if (Peek() == 'e' || Peek() == 'E') {
      integer = false;
      ++i_;
      if (Peek() == '+' || Peek() == '-') ++i_;
      if (!Digit(Peek())) return false;
      while (Digit(Peek())) ++i_;
    }
    const std::string text(t_.substr(start, i_ - start));
    if (integer && !negative) {
      // Decimal digits, accumulated with an overflow check.
      uint64_t n = 0;
      bool fits = true;
      for (char c : text) {
        const uint64_t d = static_cast<uint64_t>(c - '0');
        if (n > (UINT64_MAX - d) / 10) {
          fits = false;
          break;
        }
        n = n * 10 + d;
      }
      if (fits) {
        v->kind = RefValue::Kind::kUnsigned;
        v->num = n;
        return true;
      }
    }
    v->kind = RefValue::Kind::kOther;
    return std::isfinite(std::strtod(text.c_str(), nullptr));
  }

  std::string_view t_;
  size_t i_ = 0;
};

}  // namespace rocemu::fuzz

#endif  // ROCEMU_TESTS_FUZZ_REFERENCE_JSON_H_
