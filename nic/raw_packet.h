// Raw packet QPs (IBV_QPT_RAW_PACKET), as a ConnectX runs them: a send WQE
// carries a whole Ethernet frame, built by the application (L2 to L4), which
// leaves the port as it is; a received frame that a flow rule
// (nic/flow_table.h) steers to the QP is placed whole into its next receive
// WQE. No transport runs: no PSN, no ACK, no retry; a frame the QP cannot
// take is dropped and counted.
//
// Loopback, as a ConnectX's e-switch switches a vport's own traffic: a frame
// sent to the port's own MAC is delivered to the device's flow rules and
// does not reach the wire; one sent to a group address (multicast,
// broadcast) goes to the wire and a copy to the flow rules of the device's
// other QPs (unless the medium returns it: RnicConfig::medium_loops_back);
// any other frame goes to the wire only.
#ifndef ROCEMU_NIC_RAW_PACKET_H_
#define ROCEMU_NIC_RAW_PACKET_H_

#include <cstdint>
#include <span>

#include "nic/clock.h"
#include "nic/frame_io.h"
#include "nic/qp.h"

namespace rocemu::nic {

class Rnic;

class RawPacket {
 public:
  // Smallest frame a raw QP sends: an Ethernet header.
  static constexpr uint32_t kMinFrame = 14;
  // Sends the WQE at the head of the send queue: true with out.len set
  // when a frame is for the wire; true with out.len 0 when it was
  // delivered locally only; false when it failed (an error completion).
  static bool BuildNext(Rnic& nic, Qp& qp, TxFrame& out);
  // Places `frame` into the QP's next receive WQE.
  static void Receive(Rnic& nic, Qp& qp, std::span<const uint8_t> frame);
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_RAW_PACKET_H_
