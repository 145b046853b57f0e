// The General Services Interface: QP1 of the port (IBTA vol. 1 13.5). It
// receives UD SEND_ONLY frames carrying 256-byte MADs, checks them (P_Key
// against the whole P_Key table, Q_Key 0x80010000, size, common header),
// hands CM-class MADs to the CM agent and answers requests for classes or
// methods nobody serves with the standard error status; everything it drops
// is counted. Outgoing MADs wait in a bounded queue that Transmit drains
// ahead of the data QPs (MADs are rare; a handshake must not queue behind
// bulk traffic).
#ifndef ROCEMU_NIC_GSI_H_
#define ROCEMU_NIC_GSI_H_

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "nic/clock.h"
#include "nic/counters.h"
#include "nic/frame_io.h"
#include "nic/gid_table.h"
#include "nic/pkey_table.h"
#include "protocol/frame.h"
#include "protocol/mad.h"

namespace rocemu::nic {

class CmAgent;

// Where a MAD comes from or goes to: the UD address vector plus the BTH and
// DETH fields that travel with it.
struct MadAddress {
  protocol::MacAddr mac{};  // the peer's MAC (next hop)
  Gid gid{};                // the peer's GID (IP address)
  uint8_t sgid_index = 0;   // our GID the frame is sent from / arrived at
  uint16_t pkey = kDefaultPKey;
  uint16_t pkey_index = 0;           // where `pkey` matched our P_Key table
  uint32_t qpn = protocol::kGsiQpn;  // the peer's QP (DETH source QP)
  uint32_t qkey = protocol::kGsiQkey;
  uint8_t traffic_class = 0;
  uint32_t flow_label = 0;
  uint8_t hop_limit = 64;
};

// A MAD as the GSI received it: the 256 bytes (borrowed for the call), the
// decoded common header and the sender.
struct ReceivedMad {
  std::span<const uint8_t> mad;
  protocol::MadHeader hdr;
  MadAddress from;
};

// QP1's UDP source port: one fixed port per sender, as rxe uses; any value
// of 0xC000-0xFFFF is allowed (annex A17.3.1).
inline constexpr uint16_t kGsiUdpSourcePort = 0xC001;

class Gsi {
 public:
  // `queue_capacity` MADs may wait for the wire; more are counted in
  // mad_tx_drop. All referents must outlive the GSI.
  Gsi(const protocol::MacAddr& mac, const PKeyTable& pkeys,
      const GidTable& gids, DeviceCounters& counters,
      uint32_t queue_capacity = 512);

  void set_cm(CmAgent* cm) { cm_ = cm; }
  // MADs go out tagged with the port's VLAN (PCP 0) when it has one.
  void set_vlan(std::optional<uint16_t> vid) { vlan_ = vid; }

  // A parsed RoCE frame whose BTH destination QP is 1.
  void Receive(const protocol::ParsedFrame& frame, TimeNs now);

  // Queues a MAD (exactly kMadSize bytes) for `to`. False (and mad_tx_drop
  // counted) when the queue is full.
  bool Send(const MadAddress& to, std::span<const uint8_t> mad);

  // Builds queued MADs into `frames`; returns how many were filled.
  size_t Transmit(std::span<TxFrame> frames);
  bool HasPending() const { return count_ != 0; }
  uint32_t pending() const { return count_; }

 private:
  struct Pending {
    MadAddress to;
    std::array<uint8_t, protocol::kMadSize> mad;
  };

  // The P_Key table entry a frame's P_Key matches (QP1 belongs to every
  // partition of the table).
  bool MatchPKey(uint16_t pkey, uint16_t* index) const;
  // Answers an unserved Get/Set with GetResp and `status`.
  void Reject(const ReceivedMad& m, uint16_t status);

  const protocol::MacAddr& mac_;
  const PKeyTable& pkeys_;
  const GidTable& gids_;
  DeviceCounters& counters_;
  CmAgent* cm_ = nullptr;
  std::optional<uint16_t> vlan_;
  std::vector<Pending> queue_;
  uint32_t head_ = 0;
  uint32_t count_ = 0;
  uint32_t psn_ = 0;  // QP1's send PSN, one per MAD as rxe numbers them
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_GSI_H_
