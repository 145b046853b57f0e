// Queue pair types, states and attributes as ibv_qp_attr / ibv_qp_attr_mask
// name them (IBTA vol. 1 10.3 and 11.2.5).
#ifndef ROCEMU_NIC_QP_ATTR_H_
#define ROCEMU_NIC_QP_ATTR_H_

#include <cstdint>

#include "nic/access.h"
#include "protocol/frame.h"

namespace rocemu::nic {

// kXrcIni and kXrcTgt are the two halves of an XRC connection (annex A14;
// IBV_QPT_XRC_SEND and IBV_QPT_XRC_RECV): the initiator only sends (each
// request names the remote XRC SRQ), the target only responds, delivering
// into the XRC SRQs of its XRC domain.
// kRawPacket: IBV_QPT_RAW_PACKET (nic/raw_packet.h).
enum class QpType : uint8_t { kRc, kUc, kUd, kXrcIni, kXrcTgt, kRawPacket };

// Acknowledged, retried, READ/atomic-capable: RC and both XRC halves.
constexpr bool IsReliable(QpType t) {
  return t == QpType::kRc || t == QpType::kXrcIni || t == QpType::kXrcTgt;
}
constexpr bool IsXrc(QpType t) {
  return t == QpType::kXrcIni || t == QpType::kXrcTgt;
}

enum class QpState : uint8_t {
  kReset,
  kInit,
  kRtr,
  kRts,
  kSqd,
  kSqe,
  kErr,
};
inline constexpr int kNumQpStates = 7;

const char* QpStateName(QpState s);
// "RC", "UC", "UD", "RAW_PACKET", as ibv_devinfo and `rdma resource` print
// them.
const char* QpTypeName(QpType t);

// IBV_MTU_256 .. IBV_MTU_4096.
enum class PathMtu : uint8_t {
  kMtu256 = 1,
  kMtu512 = 2,
  kMtu1024 = 3,
  kMtu2048 = 4,
  kMtu4096 = 5,
};
constexpr uint32_t PathMtuBytes(PathMtu m) {
  return 128u << static_cast<uint8_t>(m);
}

// Bits of the modify-QP attribute mask; values of enum ibv_qp_attr_mask.
using QpAttrMask = uint32_t;
namespace qp_attr {
inline constexpr QpAttrMask kState = 1u << 0;
inline constexpr QpAttrMask kCurState = 1u << 1;
inline constexpr QpAttrMask kEnSqdAsyncNotify = 1u << 2;
inline constexpr QpAttrMask kAccessFlags = 1u << 3;
inline constexpr QpAttrMask kPkeyIndex = 1u << 4;
inline constexpr QpAttrMask kPort = 1u << 5;
inline constexpr QpAttrMask kQkey = 1u << 6;
inline constexpr QpAttrMask kAv = 1u << 7;
inline constexpr QpAttrMask kPathMtu = 1u << 8;
inline constexpr QpAttrMask kTimeout = 1u << 9;
inline constexpr QpAttrMask kRetryCnt = 1u << 10;
inline constexpr QpAttrMask kRnrRetry = 1u << 11;
inline constexpr QpAttrMask kRqPsn = 1u << 12;
inline constexpr QpAttrMask kMaxQpRdAtomic = 1u << 13;
inline constexpr QpAttrMask kAltPath = 1u << 14;
inline constexpr QpAttrMask kMinRnrTimer = 1u << 15;
inline constexpr QpAttrMask kSqPsn = 1u << 16;
inline constexpr QpAttrMask kMaxDestRdAtomic = 1u << 17;
inline constexpr QpAttrMask kPathMigState = 1u << 18;
inline constexpr QpAttrMask kCap = 1u << 19;
inline constexpr QpAttrMask kDestQpn = 1u << 20;
inline constexpr QpAttrMask kAll = (1u << 21) - 1;
}  // namespace qp_attr

// The network path of a connected QP (ibv_ah_attr with its GRH). RoCEv2
// always carries a GRH: the GID is the IP address.
struct QpPath {
  protocol::IpAddr dgid{};  // IPv4-mapped for IPv4 peers
  uint8_t sgid_index = 0;
  protocol::MacAddr dmac{};
  uint8_t traffic_class = 0;  // DSCP << 2 | ECN; the ECN bits are replaced
                              // by ECT(0) on RoCE data as ConnectX does
  uint32_t flow_label = 0;    // 20 bits; 0 lets the device choose
  uint8_t hop_limit = 64;
  uint8_t sl = 0;  // 802.1p priority (PFC class) of the QP
  uint8_t port_num = 1;
};

struct QpCap {
  uint32_t max_send_wr = 0;
  uint32_t max_recv_wr = 0;
  uint32_t max_send_sge = 0;
  uint32_t max_recv_sge = 0;
  uint32_t max_inline_data = 0;
};

struct QpAttr {
  QpState qp_state = QpState::kReset;
  QpState cur_qp_state = QpState::kReset;
  PathMtu path_mtu = PathMtu::kMtu1024;
  uint32_t qkey = 0;
  uint32_t rq_psn = 0;
  uint32_t sq_psn = 0;
  uint32_t dest_qp_num = 0;
  AccessFlags qp_access_flags = 0;  // remote rights granted by this QP
  QpCap cap;
  QpPath ah_attr;
  uint16_t pkey_index = 0;
  uint8_t en_sqd_async_notify = 0;
  uint8_t sq_draining = 0;
  uint8_t max_rd_atomic = 0;       // outstanding READ/atomic as requester
  uint8_t max_dest_rd_atomic = 0;  // responder resources
  uint8_t min_rnr_timer = 0;       // 5-bit IBTA code
  uint8_t port_num = 1;
  uint8_t timeout = 0;  // local ACK timeout 4.096 us * 2^timeout
  uint8_t retry_cnt = 0;
  uint8_t rnr_retry = 0;  // 7 = retry for ever
};

struct QpInitAttr {
  QpType qp_type = QpType::kRc;
  uint32_t send_cq = 0;  // CQ numbers on the same device
  uint32_t recv_cq = 0;
  uint32_t srq = 0;  // 0: no SRQ
  bool has_srq = false;
  // XRC TGT: its XRC domain. It has no PD, CQ or SRQ of its own: each
  // request binds it to the XRC SRQ its XRCETH names (that SRQ's PD, CQ
  // and receive WQEs).
  uint32_t xrcd = 0;
  QpCap cap;
  bool sq_sig_all = false;
};

// RNR NAK timer codes of IBTA vol. 1 table 45, in nanoseconds.
constexpr uint64_t RnrTimerNs(uint8_t code) {
  // Units of 10 us; code 0 is the longest, 655.36 ms.
  constexpr uint32_t kTenUs[32] = {
      65536, 1,    2,    3,    4,    6,     8,     12,    16,    24,   32,
      48,    64,   96,   128,  192,  256,   384,   512,   768,   1024, 1536,
      2048,  3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152};
  return static_cast<uint64_t>(kTenUs[code & 0x1F]) * 10000;
}

// Local ACK timeout: 4.096 us * 2^timeout; 0 disables the timer.
constexpr uint64_t LocalAckTimeoutNs(uint8_t timeout) {
  return timeout == 0 ? 0 : 4096ull << (timeout & 0x1F);
}

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_QP_ATTR_H_
