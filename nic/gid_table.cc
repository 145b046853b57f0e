#include "nic/gid_table.h"

#include <cstdio>

#include "absl/strings/str_format.h"

namespace rocemu::nic {

Gid GidFromIpv4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  Gid g{};
  g[10] = 0xFF;
  g[11] = 0xFF;
  g[12] = a;
  g[13] = b;
  g[14] = c;
  g[15] = d;
  return g;
}

Gid GidFromIpv4(uint32_t addr) {
  return GidFromIpv4(
      static_cast<uint8_t>(addr >> 24), static_cast<uint8_t>(addr >> 16),
      static_cast<uint8_t>(addr >> 8), static_cast<uint8_t>(addr));
}

bool GidIsIpv4Mapped(const Gid& gid) { return protocol::IsIpv4Mapped(gid); }

Gid LinkLocalGidFromMac(const protocol::MacAddr& mac) {
  Gid g{};
  g[0] = 0xFE;
  g[1] = 0x80;
  g[8] = mac[0] ^ 0x02;  // flip the universal/local bit
  g[9] = mac[1];
  g[10] = mac[2];
  g[11] = 0xFF;
  g[12] = 0xFE;
  g[13] = mac[3];
  g[14] = mac[4];
  g[15] = mac[5];
  return g;
}

std::string GidToString(const Gid& gid) {
  if (GidIsIpv4Mapped(gid)) {
    return absl::StrFormat("%u.%u.%u.%u", gid[12], gid[13], gid[14], gid[15]);
  }
  std::string s;
  for (int i = 0; i < 16; i += 2) {
    if (i) s += ':';
    absl::StrAppendFormat(&s, "%x", (gid[i] << 8) | gid[i + 1]);
  }
  return s;
}

namespace {

// absl::StrSplit does not take std::string_view in Debian's Abseil build.
std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t at = text.find(sep, start);
    if (at == std::string_view::npos) {
      parts.push_back(text.substr(start));
      return parts;
    }
    parts.push_back(text.substr(start, at - start));
    start = at + 1;
  }
}

std::optional<Gid> ParseIpv4(std::string_view text) {
  std::vector<std::string_view> parts = Split(text, '.');
  if (parts.size() != 4) return std::nullopt;
  uint8_t b[4];
  for (int i = 0; i < 4; ++i) {
    if (parts[i].empty() || parts[i].size() > 3) return std::nullopt;
    unsigned v = 0;
    for (char c : parts[i]) {
      if (c < '0' || c > '9') return std::nullopt;
      v = v * 10 + static_cast<unsigned>(c - '0');
    }
    if (v > 255) return std::nullopt;
    b[i] = static_cast<uint8_t>(v);
  }
  return GidFromIpv4(b[0], b[1], b[2], b[3]);
}

bool ParseGroups(std::string_view text, std::vector<uint16_t>* out) {
  if (text.empty()) return true;
  for (std::string_view g : Split(text, ':')) {
    if (g.empty() || g.size() > 4) return false;
    unsigned v = 0;
    for (char c : g) {
      int d;
      if (c >= '0' && c <= '9') {
        d = c - '0';
      } else if (c >= 'a' && c <= 'f') {
        d = c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        d = c - 'A' + 10;
      } else {
        return false;
      }
      v = v * 16 + static_cast<unsigned>(d);
    }
    out->push_back(static_cast<uint16_t>(v));
  }
  return true;
}

}  // namespace

std::optional<Gid> ParseGid(std::string_view text) {
  if (text.find(':') == std::string_view::npos) return ParseIpv4(text);
  // A trailing dotted quad (::ffff:10.0.0.1) becomes two groups.
  std::string buf(text);
  if (size_t dot = buf.find('.'); dot != std::string::npos) {
    size_t colon = buf.rfind(':');
    std::optional<Gid> v4 = ParseIpv4(std::string_view(buf).substr(colon + 1));
    if (!v4) return std::nullopt;
    buf = absl::StrFormat("%s%x:%x", buf.substr(0, colon + 1),
                          ((*v4)[12] << 8) | (*v4)[13],
                          ((*v4)[14] << 8) | (*v4)[15]);
  }
  std::vector<uint16_t> head, tail;
  size_t dc = buf.find("::");
  if (dc == std::string::npos) {
    if (!ParseGroups(buf, &head) || head.size() != 8) return std::nullopt;
  } else {
    if (buf.find("::", dc + 1) != std::string::npos) return std::nullopt;
    if (!ParseGroups(std::string_view(buf).substr(0, dc), &head) ||
        !ParseGroups(std::string_view(buf).substr(dc + 2), &tail) ||
        head.size() + tail.size() > 7) {
      return std::nullopt;
    }
    head.resize(8 - tail.size(), 0);
    head.insert(head.end(), tail.begin(), tail.end());
  }
  Gid g{};
  for (int i = 0; i < 8; ++i) {
    g[2 * i] = static_cast<uint8_t>(head[i] >> 8);
    g[2 * i + 1] = static_cast<uint8_t>(head[i]);
  }
  return g;
}

GidTable::GidTable(uint32_t capacity) : entries_(capacity) {}

absl::Status GidTable::Set(uint32_t index, const Gid& gid, GidType type) {
  if (index >= entries_.size()) {
    return absl::OutOfRangeError(absl::StrFormat(
        "GID index %u outside the table (%u entries)", index, capacity()));
  }
  if (auto it = by_gid_.find(gid); it != by_gid_.end() && it->second != index) {
    return absl::AlreadyExistsError(absl::StrFormat(
        "GID %s already at index %u", GidToString(gid), it->second));
  }
  Entry& e = entries_[index];
  if (e.valid) by_gid_.erase(e.gid);
  e = Entry{gid, type, true};
  by_gid_[gid] = index;
  ++generation_;
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> GidTable::Add(const Gid& gid, GidType type) {
  if (auto it = by_gid_.find(gid); it != by_gid_.end()) return it->second;
  for (uint32_t i = 0; i < entries_.size(); ++i) {
    if (!entries_[i].valid) {
      entries_[i] = Entry{gid, type, true};
      by_gid_[gid] = i;
      ++generation_;
      return i;
    }
  }
  return absl::ResourceExhaustedError(
      absl::StrFormat("GID table full (%u entries)", capacity()));
}

absl::Status GidTable::Remove(uint32_t index) {
  if (index >= entries_.size() || !entries_[index].valid) {
    return absl::NotFoundError(absl::StrFormat("no GID at index %u", index));
  }
  by_gid_.erase(entries_[index].gid);
  entries_[index].valid = false;
  ++generation_;
  return absl::OkStatus();
}

std::optional<Gid> GidTable::Get(uint32_t index) const {
  if (index >= entries_.size() || !entries_[index].valid) return std::nullopt;
  return entries_[index].gid;
}

std::optional<GidType> GidTable::Type(uint32_t index) const {
  if (index >= entries_.size() || !entries_[index].valid) return std::nullopt;
  return entries_[index].type;
}

std::optional<uint32_t> GidTable::Find(const Gid& gid) const {
  auto it = by_gid_.find(gid);
  if (it == by_gid_.end()) return std::nullopt;
  return it->second;
}

}  // namespace rocemu::nic
