#include "verbs/tools/pingpong_dest.h"

#include <arpa/inet.h>

#include <cstdio>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace rocemu::pingpong {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Parses `digits` hex digits at `pos`; false on a non-hex character.
bool ParseHex(std::span<const char> m, size_t pos, size_t digits,
              uint32_t* value) {
  uint32_t v = 0;
  for (size_t i = 0; i < digits; ++i) {
    const int d = HexValue(m[pos + i]);
    if (d < 0) return false;
    v = (v << 4) | static_cast<uint32_t>(d);
  }
  *value = v;
  return true;
}

}  // namespace

DestMessage FormatDest(const Dest& dest) {
  DestMessage out{};
  char gid[33];
  for (size_t i = 0; i < dest.gid.size(); ++i)
    std::snprintf(gid + 2 * i, 3, "%02x", dest.gid[i]);
  std::snprintf(out.data(), out.size(), "%04x:%06x:%06x:%s", dest.lid,
                dest.qpn & 0xFFFFFFu, dest.psn & 0xFFFFFFu, gid);
  return out;
}

absl::StatusOr<Dest> ParseDest(std::span<const char> m) {
  if (m.size() != kDestMessageSize)
    return absl::InvalidArgumentError(absl::StrCat(
        "address message is ", m.size(), " bytes, want ", kDestMessageSize));
  // Field layout: LID at 0 (4), QPN at 5 (6), PSN at 12 (6), GID at 19 (32),
  // NUL at 51.
  if (m[4] != ':' || m[11] != ':' || m[18] != ':')
    return absl::InvalidArgumentError(
        "address message: ':' separators not at offsets 4, 11 and 18");
  if (m[51] != '\0')
    return absl::InvalidArgumentError(
        "address message: not NUL-terminated at offset 51");
  Dest d;
  uint32_t v = 0;
  if (!ParseHex(m, 0, 4, &v))
    return absl::InvalidArgumentError("address message: LID is not hex");
  d.lid = static_cast<uint16_t>(v);
  if (!ParseHex(m, 5, 6, &d.qpn))
    return absl::InvalidArgumentError("address message: QPN is not hex");
  if (!ParseHex(m, 12, 6, &d.psn))
    return absl::InvalidArgumentError("address message: PSN is not hex");
  for (size_t i = 0; i < d.gid.size(); ++i) {
    if (!ParseHex(m, 19 + 2 * i, 2, &v))
      return absl::InvalidArgumentError("address message: GID is not hex");
    d.gid[i] = static_cast<uint8_t>(v);
  }
  return d;
}

std::string GidToText(const Gid& gid) {
  char text[INET6_ADDRSTRLEN];
  if (inet_ntop(AF_INET6, gid.data(), text, sizeof(text)) == nullptr)
    return "?";
  return text;
}

bool GidHasInterfaceId(const Gid& gid) {
  for (size_t i = 8; i < gid.size(); ++i)
    if (gid[i] != 0) return true;
  return false;
}

bool GidIpv4(const Gid& gid, std::array<uint8_t, 4>* ipv4) {
  for (size_t i = 0; i < 10; ++i)
    if (gid[i] != 0) return false;
  if (gid[10] != 0xFF || gid[11] != 0xFF) return false;
  for (size_t i = 0; i < 4; ++i) (*ipv4)[i] = gid[12 + i];
  return true;
}

}  // namespace rocemu::pingpong
