// The strict YAML reading the configuration is built on: every mapping is
// read through a MapReader, which refuses unknown and duplicate keys and
// values of the wrong type or range, and every error names the file, line
// and column of the offending key (Errors).
#ifndef ROCEMU_CONFIG_YAML_READER_H_
#define ROCEMU_CONFIG_YAML_READER_H_

#include <charconv>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "config/config.h"
#include "yaml-cpp/yaml.h"

namespace rocemu::config {

// "a scalar", "a list" ...: what a node is, for error messages.
const char* TypeName(const YAML::Node& n);

// Produces the single error line every failure is reported with.
// Keys and yaml-cpp's messages quote the file's own text, which may hold
// control characters (a raw newline after a backslash): escaped, so an
// error stays one line.
std::string OneLine(absl::string_view text);

// Errors of one source (a file path or "<string>"), each as
// "source:line:column: key: problem".
class Errors {
 public:
  explicit Errors(std::string source) : source_(std::move(source)) {}
  absl::Status At(const YAML::Mark& mark, absl::string_view key,
                  absl::string_view problem) const {
    int line = mark.is_null() ? 0 : mark.line + 1;
    int col = mark.is_null() ? 0 : mark.column + 1;
    return absl::InvalidArgumentError(
        absl::StrFormat("%s:%d:%d: %s: %s", source_, line, col, OneLine(key),
                        OneLine(problem)));
  }
  const std::string& source() const { return source_; }

 private:
  std::string source_;
};

// Parses integers in decimal or 0x-hex; rejects signs, spaces and junk.
bool ParseUint(absl::string_view s, uint64_t* out);

// "02:00:00:00:00:01": exactly six two-digit hex groups.
bool ParseMac(absl::string_view s, MacAddr* mac);
// An IPv4 (stored ::ffff:a.b.c.d, *ipv6 false) or IPv6 address.
bool ParseIp(absl::string_view s, IpAddr* ip, bool* ipv6);

// A mapping being read: every key must be consumed, else it is unknown.
class MapReader {
 public:
  MapReader(const Errors& errors, YAML::Node node, std::string path)
      : errors_(errors), node_(std::move(node)), path_(std::move(path)) {}

  // Checks the node is a mapping (or null: all defaults) with unique
  // scalar keys.
  absl::Status Open() {
    if (Empty()) return absl::OkStatus();
    if (!node_.IsMap()) {
      return errors_.At(
          node_.Mark(), PathOr("(top level)"),
          absl::StrCat("expected a mapping, got ", TypeName(node_)));
    }
    absl::flat_hash_set<std::string> seen;
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      if (!it->first.IsScalar()) {
        return errors_.At(it->first.Mark(), PathOr("(top level)"),
                          "keys must be plain names");
      }
      std::string key = it->first.Scalar();
      if (!seen.insert(key).second) {
        return errors_.At(it->first.Mark(), Key(key), "duplicate key");
      }
    }
    return absl::OkStatus();
  }

  // Rejects the first key that no getter asked for.
  absl::Status Finish() const {
    if (Empty()) return absl::OkStatus();
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      std::string key = it->first.Scalar();
      if (!consumed_.contains(key)) {
        return errors_.At(it->first.Mark(), Key(key), "unknown key");
      }
    }
    return absl::OkStatus();
  }

  // The value of `key`, or an undefined node when absent.
  YAML::Node Get(absl::string_view key) {
    consumed_.insert(std::string(key));
    if (Empty()) return YAML::Node(YAML::NodeType::Undefined);
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      if (it->first.Scalar() == key) return it->second;
    }
    return YAML::Node(YAML::NodeType::Undefined);
  }
  bool Has(absl::string_view key) const {
    if (Empty()) return false;
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      if (it->first.Scalar() == key) return true;
    }
    return false;
  }

  // Absent or null: every key takes its default.
  bool Empty() const { return !node_.IsDefined() || node_.IsNull(); }

  std::string Key(absl::string_view key) const {
    return path_.empty() ? std::string(key) : absl::StrCat(path_, ".", key);
  }
  const YAML::Mark Mark() const { return node_.Mark(); }
  const Errors& errors() const { return errors_; }

  absl::Status Scalar(absl::string_view key, YAML::Node* out,
                      const char* expected) {
    *out = Get(key);
    if (!out->IsDefined()) return absl::OkStatus();
    if (!out->IsScalar()) {
      return errors_.At(
          out->Mark(), Key(key),
          absl::StrCat("expected ", expected, ", got ", TypeName(*out)));
    }
    return absl::OkStatus();
  }

  absl::Status String(absl::string_view key, std::string* out) {
    YAML::Node n;
    if (auto s = Scalar(key, &n, "a string"); !s.ok()) return s;
    if (n.IsDefined()) *out = n.Scalar();
    return absl::OkStatus();
  }

  absl::Status Bool(absl::string_view key, bool* out) {
    YAML::Node n;
    if (auto s = Scalar(key, &n, "true or false"); !s.ok()) return s;
    if (!n.IsDefined()) return absl::OkStatus();
    std::string v = absl::AsciiStrToLower(n.Scalar());
    if (v == "true") {
      *out = true;
    } else if (v == "false") {
      *out = false;
    } else {
      return errors_.At(
          n.Mark(), Key(key),
          absl::StrCat("expected true or false, got '", n.Scalar(), "'"));
    }
    return absl::OkStatus();
  }

  template <typename T>
  absl::Status Uint(absl::string_view key, uint64_t lo, uint64_t hi, T* out) {
    YAML::Node n;
    if (auto s = Scalar(key, &n, "an integer"); !s.ok()) return s;
    if (!n.IsDefined()) return absl::OkStatus();
    uint64_t v = 0;
    if (!ParseUint(n.Scalar(), &v)) {
      return errors_.At(
          n.Mark(), Key(key),
          absl::StrCat("expected an integer, got '", n.Scalar(), "'"));
    }
    if (v < lo || v > hi) {
      return errors_.At(
          n.Mark(), Key(key),
          absl::StrFormat("%d is out of range [%d, %d]", v, lo, hi));
    }
    *out = static_cast<T>(v);
    return absl::OkStatus();
  }

  absl::Status Double(absl::string_view key, double lo, double hi,
                      double* out) {
    YAML::Node n;
    if (auto s = Scalar(key, &n, "a number"); !s.ok()) return s;
    if (!n.IsDefined()) return absl::OkStatus();
    double v = 0;
    if (!absl::SimpleAtod(n.Scalar(), &v) || !std::isfinite(v)) {
      return errors_.At(
          n.Mark(), Key(key),
          absl::StrCat("expected a number, got '", n.Scalar(), "'"));
    }
    if (v < lo || v > hi) {
      return errors_.At(
          n.Mark(), Key(key),
          absl::StrFormat("%g is out of range [%g, %g]", v, lo, hi));
    }
    *out = v;
    return absl::OkStatus();
  }

  // A file mode written in octal ("0660"); quoted or not.
  absl::Status Mode(absl::string_view key, uint32_t* out) {
    YAML::Node mode;
    if (auto s = Scalar(key, &mode, "an octal mode"); !s.ok()) return s;
    if (!mode.IsDefined()) return absl::OkStatus();
    absl::string_view s = mode.Scalar();
    uint32_t v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 8);
    if (s.empty() || ec != std::errc() || ptr != s.data() + s.size() ||
        v > 0777) {
      return errors_.At(
          mode.Mark(), Key(key),
          absl::StrCat("'", s, "' is not an octal mode 0000..0777"));
    }
    *out = v;
    return absl::OkStatus();
  }

  // One of `names`; returns its index via *out.
  absl::Status Enum(absl::string_view key,
                    std::initializer_list<absl::string_view> names, int* out) {
    YAML::Node n;
    if (auto s = Scalar(key, &n, "a name"); !s.ok()) return s;
    if (!n.IsDefined()) return absl::OkStatus();
    int i = 0;
    for (absl::string_view name : names) {
      if (n.Scalar() == name) {
        *out = i;
        return absl::OkStatus();
      }
      ++i;
    }
    std::string allowed;
    for (absl::string_view name : names) {
      absl::StrAppend(&allowed, allowed.empty() ? "" : ", ", name);
    }
    return errors_.At(
        n.Mark(), Key(key),
        absl::StrCat("'", n.Scalar(), "' is not one of: ", allowed));
  }

  // A list (or absent/null = empty).
  absl::Status List(absl::string_view key, YAML::Node* out) {
    *out = Get(key);
    if (!out->IsDefined() || out->IsNull()) return absl::OkStatus();
    if (!out->IsSequence()) {
      return errors_.At(out->Mark(), Key(key),
                        absl::StrCat("expected a list, got ", TypeName(*out)));
    }
    return absl::OkStatus();
  }

 private:
  std::string PathOr(absl::string_view fallback) const {
    return path_.empty() ? std::string(fallback) : path_;
  }

  const Errors& errors_;
  YAML::Node node_;
  std::string path_;
  absl::flat_hash_set<std::string> consumed_;
};

}  // namespace rocemu::config

#endif  // ROCEMU_CONFIG_YAML_READER_H_
