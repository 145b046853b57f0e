// The CM's record of one id: a listener, a connection (active or passive)
// or a SIDR exchange. Internal to the CM agent.
#ifndef ROCEMU_NIC_CM_CM_CONNECTION_H_
#define ROCEMU_NIC_CM_CM_CONNECTION_H_

#include <array>
#include <cstdint>
#include <optional>

#include "nic/clock.h"
#include "nic/cm/cm_types.h"
#include "nic/gsi.h"
#include "nic/qp_attr.h"
#include "protocol/mad.h"

namespace rocemu::nic {

struct CmConnection {
  CmId id = kInvalidCmId;
  ClientId client = kKernelClient;
  CmState state = CmState::kIdle;
  bool listener = false;
  bool active = false;
  // The consumer destroyed the id while the protocol still had work to do
  // (a DREQ to retransmit, TimeWait to sit out): no more events, and the
  // record goes when that work is done.
  bool orphan = false;
  CmId listen_id = kInvalidCmId;

  // Listener.
  uint64_t service_mask = ~uint64_t{0};
  std::optional<Gid> bound_addr;
  std::optional<QpType> listen_qp_type;  // none: any transport

  // Identity on the wire.
  uint64_t service_id = 0;
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  uint64_t remote_ca_guid = 0;
  uint64_t tid = 0;  // of the REQ / SIDR_REQ; REP, RTU, MRA, REJ reuse it
  MadAddress peer;   // the peer's QP1

  // The connection as negotiated.
  QpType qp_type = QpType::kRc;
  uint32_t local_qpn = 0;
  uint32_t remote_qpn = 0;
  bool manage_qp = false;
  CmPath path;
  uint16_t pkey_index = 0;
  uint32_t sq_psn = 0;  // our send PSN (the peer's starting PSN)
  uint32_t rq_psn = 0;  // our receive PSN (the one we announced)
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  uint8_t retry_count = 7;
  uint8_t rnr_retry_count = 7;
  uint8_t min_rnr_timer = 0;
  uint8_t ack_timeout = 0;  // the QP's local ACK timeout exponent
  bool auto_rtu = true;

  // Retransmission of the outstanding request (REQ, REP, DREQ, SIDR_REQ):
  // the MAD as sent, the timeout per try and the tries left.
  std::array<uint8_t, protocol::kMadSize> msg{};
  bool msg_valid = false;
  uint8_t max_cm_retries = 0;
  uint8_t retries_left = 0;
  TimeNs response_timeout_ns = 0;  // REQ / REP / DREQ wait
  TimeNs retry_timeout_ns = 0;     // of the outstanding request (an MRA
                                   // stretches it to the peer's service time)
  // The last MRA, RTU or DREP we sent: what a duplicate of the message it
  // answered gets again.
  std::array<uint8_t, protocol::kMadSize> last_reply{};
  bool last_reply_valid = false;
  uint8_t service_timeout = 0;  // of the MRA we sent

  // The one timer of the id.
  enum class Timer : uint8_t { kNone, kResend, kTimewait };
  Timer timer = Timer::kNone;
  TimeNs deadline = kNever;
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_CM_CM_CONNECTION_H_
