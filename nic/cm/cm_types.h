// What a consumer of the RNIC's Communication Manager sees: connection ids,
// states, the parameters of listen / connect / accept / SIDR, and the events
// the CM queues. These map onto ib_cm (and through it rdma_cm): a CmId is an
// ib_cm_id, a CmEvent an ib_cm_event. The daemon's session server exposes
// the same calls to librdmacm clients; the simulator calls them directly.
#ifndef ROCEMU_NIC_CM_CM_TYPES_H_
#define ROCEMU_NIC_CM_CM_TYPES_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "nic/gid_table.h"
#include "nic/handles.h"
#include "nic/pkey_table.h"
#include "nic/qp_attr.h"
#include "protocol/cm_ip.h"
#include "protocol/frame.h"

namespace rocemu::nic {

// A listener, a connection or a SIDR exchange. 0 is never used.
using CmId = uint32_t;
inline constexpr CmId kInvalidCmId = 0;

// enum ib_cm_state (IBTA vol. 1 12.9 states).
enum class CmState : uint8_t {
  kIdle,
  kListen,
  kReqSent,
  kReqRcvd,
  kMraReqSent,
  kMraReqRcvd,
  kRepSent,
  kRepRcvd,
  kMraRepSent,
  kMraRepRcvd,
  kEstablished,
  kDreqSent,
  kDreqRcvd,
  kTimewait,
  kSidrReqSent,
  kSidrReqRcvd,
};
const char* CmStateName(CmState s);  // "REQ_SENT", "ESTABLISHED", ...

// The RoCE path of a connection: what rdma_resolve_route builds locally (no
// subnet administrator): our GID index, the peer's GID and next-hop MAC,
// the partition, MTU and the GRH fields.
struct CmPath {
  uint8_t sgid_index = 0;
  Gid dgid{};
  protocol::MacAddr dmac{};
  uint16_t pkey = kDefaultPKey;
  PathMtu mtu = PathMtu::kMtu1024;
  uint8_t traffic_class = 0;
  uint32_t flow_label = 0;
  uint8_t hop_limit = 64;
  uint8_t sl = 0;
  // 4.096 us * 2^t one way; rdma_cm uses 18 on RoCE (CMA_IBOE_PACKET_LIFETIME).
  uint8_t packet_life_time = 18;
  uint8_t packet_rate = 0;

  friend bool operator==(const CmPath&, const CmPath&) = default;
};

// ib_cm_req_param + rdma_conn_param: the active side's REQ.
struct CmConnectParams {
  ClientId client = kKernelClient;  // echoed in every event of the id
  uint64_t service_id = 0;
  // The QP the REQ announces (RC, UC or an XRC INI QP, which the REQ
  // offers as transport XRC). With manage_qp the CM drives it
  // (RESET/INIT -> INIT -> RTR -> RTS on the REP, ERR on failure or
  // disconnect); otherwise the consumer does, e.g. through InitQpAttr.
  uint32_t qpn = 0;
  bool manage_qp = true;
  // The QP's type when the CM does not manage it (it looks a managed QP
  // up itself).
  QpType qp_type = QpType::kRc;
  CmPath path;
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  uint8_t retry_count = 7;
  uint8_t rnr_retry_count = 7;
  uint8_t remote_cm_response_timeout = 20;  // 4.096 us * 2^t, as rdma_cm
  uint8_t local_cm_response_timeout = 20;
  uint8_t max_cm_retries = 15;
  bool flow_control = false;
  bool srq = false;
  // Our receive PSN; drawn from the CM's generator when not given.
  std::optional<uint32_t> starting_psn;
  // The RNR NAK timer code our QP advertises (Linux's CM leaves 0).
  uint8_t min_rnr_timer = 0;
  // Send the RTU as soon as the REP is processed (rdma_cm's behaviour).
  // Otherwise the REP is reported and Establish() sends the RTU.
  bool auto_rtu = true;
  // rdma_cm's IP header: when given, it takes the first 36 bytes of the
  // REQ's private data and `private_data` may hold 56 more.
  std::optional<protocol::CmIpHeader> ip;
  std::vector<uint8_t> private_data;  // up to 92 (56 with `ip`)
};

// ib_cm_rep_param: the passive side's answer.
struct CmAcceptParams {
  uint32_t qpn = 0;
  bool manage_qp = true;
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  uint8_t rnr_retry_count = 7;
  bool flow_control = false;
  bool srq = false;
  std::optional<uint32_t> starting_psn;
  uint8_t min_rnr_timer = 0;
  std::vector<uint8_t> private_data;  // up to 196
};

// ib_cm_listen: a service ID (with a mask of the bits that must match) and,
// for rdma_cm IP services, the address the listener is bound to (none: any
// of our addresses).
struct CmListenParams {
  ClientId client = kKernelClient;
  uint64_t service_id = 0;
  uint64_t service_mask = ~uint64_t{0};
  std::optional<Gid> bound_addr;
  // The QP type of the listener's rdma_cm id: a REQ for another transport
  // (an XRC REQ on an RC listener, an RC REQ on an XRC TGT listener) is
  // rejected "invalid transport service type". None takes any (ib_cm).
  std::optional<QpType> qp_type;
};

// ib_cm_sidr_req_param: resolve a UD service to a QPN and Q_Key.
struct CmSidrQueryParams {
  ClientId client = kKernelClient;
  uint64_t service_id = 0;
  CmPath path;
  uint64_t timeout_ns = 4'096'000'000;  // rdma_cm: 1 << (20 - 8) ms
  uint8_t max_cm_retries = 15;
  std::optional<protocol::CmIpHeader> ip;  // as in CmConnectParams
  std::vector<uint8_t> private_data;       // up to 216 (180 with `ip`)
};

// ib_cm_sidr_rep_param.
struct CmSidrReplyParams {
  uint8_t status = 0;  // protocol::cm_sidr_status
  uint32_t qpn = 0;
  uint32_t qkey = 0;
  std::vector<uint8_t> info;          // up to 72
  std::vector<uint8_t> private_data;  // up to 136
};

enum class CmEventType : uint8_t {
  kReqReceived,      // passive: a new connection `id` under `listen_id`
  kRepReceived,      // active: the REP's parameters (before the RTU)
  kEstablished,      // both sides: RTU sent / RTU or first data received
  kRejected,         // REJ received (`reason`, `ari`, private data)
  kMraReceived,      // the peer asked for more time (`service_timeout`)
  kUnreachable,      // REQ or REP retries exhausted
  kConnectError,     // the REP could not be applied to the QP: REJ sent
  kDisconnected,     // DREQ received (DREP sent), DREP received, or DREQ
                     // retries exhausted (`timed_out`)
  kTimewaitExit,     // the connection left TimeWait: its ids may be reused
  kSidrReqReceived,  // passive: a SIDR exchange `id` under `listen_id`
  kSidrRepReceived,  // active: status, QPN, Q_Key
  kSidrUnreachable,  // SIDR_REQ retries exhausted
};
const char* CmEventName(CmEventType t);  // "REQ_RECEIVED", ...

struct CmEvent {
  CmEventType type = CmEventType::kReqReceived;
  CmId id = kInvalidCmId;
  CmId listen_id = kInvalidCmId;  // REQ / SIDR_REQ: the matched listener
  ClientId client = kKernelClient;
  uint64_t service_id = 0;
  // REQ / REP: the peer's side of the exchange, as ib_cm_req_event_param
  // and ib_cm_rep_event_param give it (responder resources and initiator
  // depth already swapped to our point of view). An XRC REQ reports the
  // INI QP and qp_type kXrcTgt (what the passive side must accept it
  // with); the REP of an XRC TGT QP reports the TGT QP.
  uint64_t remote_ca_guid = 0;
  uint32_t remote_qpn = 0;
  uint32_t remote_qkey = 0;
  uint32_t starting_psn = 0;
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  uint8_t retry_count = 0;
  uint8_t rnr_retry_count = 0;
  uint8_t target_ack_delay = 0;
  bool flow_control = false;
  bool srq = false;
  QpType qp_type = QpType::kRc;
  CmPath path;  // REQ: the path back to the requester
  // REJ
  uint16_t reason = 0;
  std::vector<uint8_t> ari;
  // MRA
  uint8_t service_timeout = 0;
  // SIDR_REP
  uint8_t sidr_status = 0;
  uint32_t sidr_qpn = 0;
  uint32_t sidr_qkey = 0;
  std::vector<uint8_t> sidr_info;
  // DISCONNECTED
  bool by_peer = false;    // the peer's DREQ ended the connection
  bool timed_out = false;  // our DREQ was never answered
  // REQ / SIDR_REQ to an rdma_cm IP service: the header, decoded; then
  // private_data holds what follows it (56 / 180 bytes).
  std::optional<protocol::CmIpHeader> ip;
  // The message's private data field, whole (IB CM carries no length).
  std::vector<uint8_t> private_data;
};

// A row of the CM's table, for state JSON and rocemu-ctl.
struct CmIdInfo {
  CmId id = kInvalidCmId;
  ClientId client = kKernelClient;
  CmState state = CmState::kIdle;
  bool listener = false;
  bool active = false;  // we sent the REQ / SIDR_REQ
  uint64_t service_id = 0;
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  uint32_t local_qpn = 0;
  uint32_t remote_qpn = 0;
  Gid remote_gid{};
  std::optional<Gid> bound_addr;  // listeners
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_CM_CM_TYPES_H_
