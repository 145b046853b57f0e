// Address handles: where a UD send goes. On RoCE every AH is global (it
// carries a GRH: the destination GID is the destination IP). The
// destination MAC is resolved by the daemon (neighbour table) after
// creation; until then the AH is not ready and a send through it must wait
// or fail.
#ifndef ROCEMU_NIC_ADDRESS_HANDLE_H_
#define ROCEMU_NIC_ADDRESS_HANDLE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nic/gid_table.h"
#include "nic/handle_table.h"
#include "nic/handles.h"
#include "nic/pd_table.h"
#include "protocol/frame.h"
#include "protocol/net_header_template.h"

namespace rocemu::nic {

// ibv_ah_attr with its ibv_global_route, for RoCE.
struct AhAttr {
  Gid dgid{};
  uint8_t sgid_index = 0;
  uint32_t flow_label = 0;  // 20 bits
  uint8_t hop_limit = 64;
  uint8_t traffic_class = 0;  // DSCP << 2 | ECN, as rxe copies it to IP
  uint8_t sl = 0;             // RoCE: 802.1p priority
  uint8_t port_num = 1;
  bool is_global = true;
};

struct AddressHandle {
  PdHandle pd = kInvalidHandle;
  AhAttr attr;
  Gid sgid{};  // resolved from the GID table at creation
  protocol::MacAddr dmac{};
  bool dmac_resolved = false;
  bool ipv6() const { return !GidIsIpv4Mapped(attr.dgid); }

  // The headers below the BTH of the last UD QP that sent through this AH
  // (Rnic::UdHeaders), so that a stream of sends to one destination
  // encodes them once. They hold that QP's UDP source port and were
  // encoded at Rnic::path_generation() `headers_gid_generation` (0: not
  // encoded). Written by the data path through a const AH: a cache.
  mutable protocol::NetHeaderTemplate headers;
  mutable uint64_t headers_gid_generation = 0;
  mutable uint16_t headers_udp_sport = 0;
};

class AhTable {
 public:
  // `gids` is port 1's GID table; both referents must outlive the table.
  AhTable(PdTable& pds, const GidTable& gids, uint32_t max_ah,
          uint8_t num_ports = 1)
      : pds_(pds), gids_(gids), num_ports_(num_ports), ahs_("AH", max_ah) {}

  // ibv_create_ah. InvalidArgument (EINVAL) for a non-global AH, an empty
  // sgid_index, a flow label over 20 bits, a port that does not exist, or
  // an IPv4 GID paired with an IPv6 one.
  absl::StatusOr<AhHandle> Create(ClientId client, PdHandle pd,
                                  const AhAttr& attr);
  absl::Status Destroy(ClientId client, AhHandle ah);
  // Hot path (UD send).
  const AddressHandle* Get(AhHandle ah) const { return ahs_.Get(ah); }
  const AddressHandle* Get(AhHandle ah, ClientId client) const {
    return ahs_.Get(ah, client);
  }
  // The daemon resolved the next hop's MAC.
  absl::Status SetDmac(AhHandle ah, const protocol::MacAddr& mac);
  uint32_t size() const { return ahs_.size(); }

 private:
  PdTable& pds_;
  const GidTable& gids_;
  uint8_t num_ports_;
  HandleTable<AddressHandle> ahs_;
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_ADDRESS_HANDLE_H_
