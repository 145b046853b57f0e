#include "config/yaml_reader.h"

#include <arpa/inet.h>

#include <cstring>
#include <vector>

#include "absl/strings/str_split.h"

namespace rocemu::config {

const char* TypeName(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Scalar:
      return "a scalar";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    default:
      return "nothing";
  }
}

// Produces the single error line every failure is reported with.
// Keys and yaml-cpp's messages quote the file's own text, which may hold
// control characters (a raw newline after a backslash): escaped, so an
// error stays one line.
std::string OneLine(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto b = static_cast<unsigned char>(ch);
    if (b < 0x20 || b == 0x7F) {
      absl::StrAppendFormat(&out, "\\x%02x", b);
    } else {
      out.push_back(ch);
    }
  }
  return out;
}

// Parses integers in decimal or 0x-hex; rejects signs, spaces and junk.
bool ParseUint(absl::string_view s, uint64_t* out) {
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  }
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, base);
  return ec == std::errc() && ptr == s.data() + s.size();
}

bool ParseMac(absl::string_view s, MacAddr* mac) {
  std::vector<absl::string_view> parts = absl::StrSplit(s, ':');
  if (parts.size() != 6) return false;
  for (size_t i = 0; i < 6; ++i) {
    if (parts[i].size() != 2) return false;
    uint8_t v = 0;
    auto [ptr, ec] =
        std::from_chars(parts[i].data(), parts[i].data() + 2, v, 16);
    if (ec != std::errc() || ptr != parts[i].data() + 2) return false;
    (*mac)[i] = v;
  }
  return true;
}

bool ParseIp(absl::string_view s, IpAddr* ip, bool* ipv6) {
  std::string str(s);
  in_addr a4;
  if (inet_pton(AF_INET, str.c_str(), &a4) == 1) {
    ip->fill(0);
    (*ip)[10] = 0xff;
    (*ip)[11] = 0xff;
    std::memcpy(ip->data() + 12, &a4, 4);
    *ipv6 = false;
    return true;
  }
  in6_addr a6;
  if (inet_pton(AF_INET6, str.c_str(), &a6) == 1) {
    std::memcpy(ip->data(), &a6, 16);
    *ipv6 = true;
    return true;
  }
  return false;
}

}  // namespace rocemu::config
