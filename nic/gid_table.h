// The port's GID table. With RoCEv2 a GID is the port's IP address: an IPv6
// address, or an IPv4 address in its IPv4-mapped form ::ffff:a.b.c.d. The
// engines turn a GID index (from an AH or a QP's path) into the source IP,
// and the receive path turns a destination IP into the GID index reported in
// the GRH area.
#ifndef ROCEMU_NIC_GID_TABLE_H_
#define ROCEMU_NIC_GID_TABLE_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "protocol/frame.h"

namespace rocemu::nic {

// Same representation as an IP address in protocol/frame.h.
using Gid = protocol::IpAddr;

Gid GidFromIpv4(uint8_t a, uint8_t b, uint8_t c, uint8_t d);
// `addr` in host order (0x0A000001 is 10.0.0.1).
Gid GidFromIpv4(uint32_t addr);
bool GidIsIpv4Mapped(const Gid& gid);
// fe80::/64 with the modified EUI-64 of the MAC, the default GID of a RoCE
// port (index 0 on ConnectX and rxe).
Gid LinkLocalGidFromMac(const protocol::MacAddr& mac);
// "10.0.0.1" for IPv4-mapped GIDs, full IPv6 hex groups otherwise.
std::string GidToString(const Gid& gid);
// Parses dotted IPv4 (stored mapped) or an IPv6 address (with "::").
std::optional<Gid> ParseGid(std::string_view text);

// ibv_gid_type (only RoCEv2 is spoken on the wire).
enum class GidType : uint8_t { kIb = 0, kRoceV1 = 1, kRoceV2 = 2 };

class GidTable {
 public:
  explicit GidTable(uint32_t capacity);

  uint32_t capacity() const { return static_cast<uint32_t>(entries_.size()); }
  // Sets entry `index`; fails if out of range or the GID is already at
  // another index (reverse lookups must stay unambiguous).
  absl::Status Set(uint32_t index, const Gid& gid,
                   GidType type = GidType::kRoceV2);
  // Puts the GID in the first free slot and returns its index (or the
  // index it already has).
  absl::StatusOr<uint32_t> Add(const Gid& gid, GidType type = GidType::kRoceV2);
  absl::Status Remove(uint32_t index);

  // ibv_query_gid: nullopt for an empty or out-of-range index.
  std::optional<Gid> Get(uint32_t index) const;
  std::optional<GidType> Type(uint32_t index) const;
  // Reverse lookup (a received frame's destination IP): nullopt if the
  // address is not ours.
  std::optional<uint32_t> Find(const Gid& gid) const;
  std::optional<uint32_t> FindIp(const protocol::IpAddr& ip) const {
    return Find(ip);
  }
  uint32_t size() const { return static_cast<uint32_t>(by_gid_.size()); }
  // Changes with every Set, Add of a new GID and Remove, never 0: what a
  // header encoded from an entry checks to know it is still current.
  uint64_t generation() const { return generation_; }

 private:
  struct Entry {
    Gid gid{};
    GidType type = GidType::kRoceV2;
    bool valid = false;
  };
  std::vector<Entry> entries_;
  absl::flat_hash_map<Gid, uint32_t> by_gid_;
  uint64_t generation_ = 1;
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_GID_TABLE_H_
