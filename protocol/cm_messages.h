// The Communication Manager's messages (IBTA vol. 1 ch. 12.6, tables 106-120):
// the 232 bytes of CM data that follow the MAD common header of a class 0x07
// MAD. Host-order structs <-> wire bytes, field by field; no state.
//
// Encode writes every byte of the 232 (reserved bits and unused private data
// as zero). Parse takes at least 232 bytes and never fails on content: every
// bit pattern decodes (reserved bits are ignored), so a parser fed junk
// cannot crash; whether the values make sense is the CM's business.
#ifndef ROCEMU_PROTOCOL_CM_MESSAGES_H_
#define ROCEMU_PROTOCOL_CM_MESSAGES_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "protocol/frame.h"
#include "protocol/mad.h"

namespace rocemu::protocol {

// Attribute IDs of the CM class (table 104).
namespace cm_attr {
inline constexpr uint16_t kClassPortInfo = 0x0001;
inline constexpr uint16_t kReq = 0x0010;
inline constexpr uint16_t kMra = 0x0011;
inline constexpr uint16_t kRej = 0x0012;
inline constexpr uint16_t kRep = 0x0013;
inline constexpr uint16_t kRtu = 0x0014;
inline constexpr uint16_t kDreq = 0x0015;
inline constexpr uint16_t kDrep = 0x0016;
inline constexpr uint16_t kSidrReq = 0x0017;
inline constexpr uint16_t kSidrRep = 0x0018;
inline constexpr uint16_t kLap = 0x0019;
inline constexpr uint16_t kApr = 0x001A;
}  // namespace cm_attr
// "REQ", "REP", ... ("?" for another attribute).
std::string_view CmAttrName(uint16_t attr_id);

// Private data sizes (table 106 ff.).
inline constexpr size_t kCmReqPrivateDataSize = 92;
inline constexpr size_t kCmMraPrivateDataSize = 222;
inline constexpr size_t kCmRejPrivateDataSize = 148;
inline constexpr size_t kCmRejAriSize = 72;
inline constexpr size_t kCmRepPrivateDataSize = 196;
inline constexpr size_t kCmRtuPrivateDataSize = 224;
inline constexpr size_t kCmDreqPrivateDataSize = 220;
inline constexpr size_t kCmDrepPrivateDataSize = 224;
inline constexpr size_t kCmSidrReqPrivateDataSize = 216;
inline constexpr size_t kCmSidrRepPrivateDataSize = 136;
inline constexpr size_t kCmSidrRepInfoSize = 72;
inline constexpr size_t kCmLapPrivateDataSize = 168;
inline constexpr size_t kCmAprPrivateDataSize = 148;
inline constexpr size_t kCmAprInfoSize = 72;

// REQ Transport Service Type (2 bits).
namespace cm_transport {
inline constexpr uint8_t kRc = 0;
inline constexpr uint8_t kUc = 1;
inline constexpr uint8_t kRd = 2;
inline constexpr uint8_t kExtended = 3;  // see cm_extended_transport
}  // namespace cm_transport
// REQ Extended Transport Type (3 bits), when the Transport Service Type is
// kExtended (IBTA annex A14).
namespace cm_extended_transport {
inline constexpr uint8_t kXrc = 1;
}  // namespace cm_extended_transport

// "Message MRAed" / "Message Rejected" (2 bits).
namespace cm_msg_response {
inline constexpr uint8_t kReq = 0;
inline constexpr uint8_t kRep = 1;
inline constexpr uint8_t kOther = 2;  // LAP for MRA, anything else for REJ
}  // namespace cm_msg_response

// REJ reasons (table 112).
namespace cm_rej_reason {
inline constexpr uint16_t kNoQp = 1;
inline constexpr uint16_t kNoEec = 2;
inline constexpr uint16_t kNoResources = 3;
inline constexpr uint16_t kTimeout = 4;
inline constexpr uint16_t kUnsupported = 5;
inline constexpr uint16_t kInvalidCommId = 6;
inline constexpr uint16_t kInvalidCommInstance = 7;
inline constexpr uint16_t kInvalidServiceId = 8;
inline constexpr uint16_t kInvalidTransportType = 9;
inline constexpr uint16_t kStaleConnection = 10;
inline constexpr uint16_t kRdcNotExist = 11;
inline constexpr uint16_t kInvalidGid = 12;
inline constexpr uint16_t kInvalidLid = 13;
inline constexpr uint16_t kInvalidSl = 14;
inline constexpr uint16_t kInvalidTrafficClass = 15;
inline constexpr uint16_t kInvalidHopLimit = 16;
inline constexpr uint16_t kInvalidPacketRate = 17;
inline constexpr uint16_t kInvalidAltGid = 18;
inline constexpr uint16_t kInvalidAltLid = 19;
inline constexpr uint16_t kInvalidAltSl = 20;
inline constexpr uint16_t kInvalidAltTrafficClass = 21;
inline constexpr uint16_t kInvalidAltHopLimit = 22;
inline constexpr uint16_t kInvalidAltPacketRate = 23;
inline constexpr uint16_t kPortCmRedirect = 24;
inline constexpr uint16_t kPortRedirect = 25;
inline constexpr uint16_t kInvalidMtu = 26;
inline constexpr uint16_t kInsufficientRespResources = 27;
inline constexpr uint16_t kConsumerDefined = 28;
inline constexpr uint16_t kInvalidRnrRetry = 29;
inline constexpr uint16_t kDuplicateLocalCommId = 30;
inline constexpr uint16_t kInvalidClassVersion = 31;
inline constexpr uint16_t kInvalidFlowLabel = 32;
inline constexpr uint16_t kInvalidAltFlowLabel = 33;
}  // namespace cm_rej_reason
// "invalid service ID", "stale connection", ... for logs and rocemu-ctl.
std::string_view CmRejReasonName(uint16_t reason);

// SIDR_REP status (table 120).
namespace cm_sidr_status {
inline constexpr uint8_t kValid = 0;
inline constexpr uint8_t kServiceIdNotSupported = 1;
inline constexpr uint8_t kRejected = 2;
inline constexpr uint8_t kNoQp = 3;
inline constexpr uint8_t kRedirect = 4;
inline constexpr uint8_t kUnsupportedVersion = 5;
}  // namespace cm_sidr_status

// The LIDs a RoCE CM puts in a path: "permissive" (no subnet manager).
inline constexpr uint16_t kPermissiveLid = 0xFFFF;

// One path of a REQ (primary at CM byte 52, alternate at 96; 44 bytes).
struct CmPathInfo {
  uint16_t local_lid = 0;
  uint16_t remote_lid = 0;
  IpAddr local_gid{};
  IpAddr remote_gid{};
  uint32_t flow_label = 0;  // 20 bits
  uint8_t packet_rate = 0;  // 6 bits
  uint8_t traffic_class = 0;
  uint8_t hop_limit = 0;
  uint8_t sl = 0;  // 4 bits
  bool subnet_local = false;
  uint8_t local_ack_timeout = 0;  // 5 bits
  bool sap_supported = false;     // alternate path only (byte 139 bit 5)

  friend bool operator==(const CmPathInfo&, const CmPathInfo&) = default;
};

struct CmReq {
  uint32_t local_comm_id = 0;
  uint64_t service_id = 0;
  uint64_t local_ca_guid = 0;
  uint32_t local_qkey = 0;
  uint32_t local_qpn = 0;  // 24 bits
  uint8_t responder_resources = 0;
  uint32_t local_eecn = 0;  // 24 bits
  uint8_t initiator_depth = 0;
  uint32_t remote_eecn = 0;                // 24 bits
  uint8_t remote_cm_response_timeout = 0;  // 5 bits
  uint8_t transport = cm_transport::kRc;   // 2 bits
  bool end_to_end_flow_control = false;
  uint32_t starting_psn = 0;              // 24 bits
  uint8_t local_cm_response_timeout = 0;  // 5 bits
  uint8_t retry_count = 0;                // 3 bits
  uint16_t pkey = 0;
  uint8_t path_mtu = 0;  // 4 bits, IBV_MTU_* values
  bool rdc_exists = false;
  uint8_t rnr_retry_count = 0;  // 3 bits
  uint8_t max_cm_retries = 0;   // 4 bits
  bool srq = false;
  uint8_t extended_transport = 0;  // 3 bits
  CmPathInfo primary;
  CmPathInfo alternate;
  std::array<uint8_t, kCmReqPrivateDataSize> private_data{};

  friend bool operator==(const CmReq&, const CmReq&) = default;
};

struct CmMra {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  uint8_t message_mraed = cm_msg_response::kReq;  // 2 bits
  uint8_t service_timeout = 0;                    // 5 bits
  std::array<uint8_t, kCmMraPrivateDataSize> private_data{};

  friend bool operator==(const CmMra&, const CmMra&) = default;
};

struct CmRej {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  uint8_t message_rejected = cm_msg_response::kReq;  // 2 bits
  uint8_t rejected_info_length = 0;                  // 7 bits
  uint16_t reason = 0;
  std::array<uint8_t, kCmRejAriSize> ari{};
  std::array<uint8_t, kCmRejPrivateDataSize> private_data{};

  friend bool operator==(const CmRej&, const CmRej&) = default;
};

struct CmRep {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  uint32_t local_qkey = 0;
  uint32_t local_qpn = 0;   // 24 bits
  uint32_t local_eecn = 0;  // 24 bits
  uint32_t starting_psn = 0;
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  uint8_t target_ack_delay = 0;   // 5 bits
  uint8_t failover_accepted = 0;  // 2 bits
  bool end_to_end_flow_control = false;
  uint8_t rnr_retry_count = 0;  // 3 bits
  bool srq = false;
  uint64_t local_ca_guid = 0;
  std::array<uint8_t, kCmRepPrivateDataSize> private_data{};

  friend bool operator==(const CmRep&, const CmRep&) = default;
};

struct CmRtu {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  std::array<uint8_t, kCmRtuPrivateDataSize> private_data{};

  friend bool operator==(const CmRtu&, const CmRtu&) = default;
};

struct CmDreq {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  uint32_t remote_qpn = 0;  // 24 bits (QPN or EECN)
  std::array<uint8_t, kCmDreqPrivateDataSize> private_data{};

  friend bool operator==(const CmDreq&, const CmDreq&) = default;
};

struct CmDrep {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  std::array<uint8_t, kCmDrepPrivateDataSize> private_data{};

  friend bool operator==(const CmDrep&, const CmDrep&) = default;
};

struct CmSidrReq {
  uint32_t request_id = 0;
  uint16_t pkey = 0;
  uint64_t service_id = 0;
  std::array<uint8_t, kCmSidrReqPrivateDataSize> private_data{};

  friend bool operator==(const CmSidrReq&, const CmSidrReq&) = default;
};

struct CmSidrRep {
  uint32_t request_id = 0;
  uint8_t status = cm_sidr_status::kValid;
  uint8_t additional_info_length = 0;
  uint32_t qpn = 0;  // 24 bits
  uint64_t service_id = 0;
  uint32_t qkey = 0;
  std::array<uint8_t, kCmSidrRepInfoSize> additional_info{};
  std::array<uint8_t, kCmSidrRepPrivateDataSize> private_data{};

  friend bool operator==(const CmSidrRep&, const CmSidrRep&) = default;
};

// Load Alternate Path (path migration; Linux refuses it on RoCE).
struct CmLap {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  uint32_t remote_qpn = 0;                 // 24 bits
  uint8_t remote_cm_response_timeout = 0;  // 5 bits
  uint16_t alt_local_lid = 0;
  uint16_t alt_remote_lid = 0;
  IpAddr alt_local_gid{};
  IpAddr alt_remote_gid{};
  uint32_t alt_flow_label = 0;  // 20 bits
  uint8_t alt_traffic_class = 0;
  uint8_t alt_hop_limit = 0;
  uint8_t alt_packet_rate = 0;  // 6 bits
  uint8_t alt_sl = 0;           // 4 bits
  bool alt_subnet_local = false;
  uint8_t alt_local_ack_timeout = 0;  // 5 bits
  std::array<uint8_t, kCmLapPrivateDataSize> private_data{};

  friend bool operator==(const CmLap&, const CmLap&) = default;
};

// Alternate Path Response.
struct CmApr {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  uint8_t additional_info_length = 0;
  uint8_t ap_status = 0;
  std::array<uint8_t, kCmAprInfoSize> additional_info{};
  std::array<uint8_t, kCmAprPrivateDataSize> private_data{};

  friend bool operator==(const CmApr&, const CmApr&) = default;
};

// Each message: its attribute ID, and Encode/Parse over the 232 bytes of CM
// data (a span of at least kMadDataSize bytes; Parse returns false when
// shorter).
#define ROCEMU_CM_MESSAGE(Type, attr)                              \
  inline constexpr uint16_t CmAttrOf(const Type*) { return attr; } \
  void EncodeCm(const Type& m, std::span<uint8_t> data);           \
  bool ParseCm(std::span<const uint8_t> data, Type* out);
ROCEMU_CM_MESSAGE(CmReq, cm_attr::kReq)
ROCEMU_CM_MESSAGE(CmMra, cm_attr::kMra)
ROCEMU_CM_MESSAGE(CmRej, cm_attr::kRej)
ROCEMU_CM_MESSAGE(CmRep, cm_attr::kRep)
ROCEMU_CM_MESSAGE(CmRtu, cm_attr::kRtu)
ROCEMU_CM_MESSAGE(CmDreq, cm_attr::kDreq)
ROCEMU_CM_MESSAGE(CmDrep, cm_attr::kDrep)
ROCEMU_CM_MESSAGE(CmSidrReq, cm_attr::kSidrReq)
ROCEMU_CM_MESSAGE(CmSidrRep, cm_attr::kSidrRep)
ROCEMU_CM_MESSAGE(CmLap, cm_attr::kLap)
ROCEMU_CM_MESSAGE(CmApr, cm_attr::kApr)
#undef ROCEMU_CM_MESSAGE

template <typename T>
inline constexpr uint16_t kCmAttrOf = CmAttrOf(static_cast<const T*>(nullptr));

// The common header every CM message carries: base version 1, class CM,
// class version 2, method Send, status 0.
MadHeader CmMadHeader(uint16_t attr_id, uint64_t tid);

// A whole 256-byte CM MAD: header + message. `mad` must hold kMadSize bytes.
template <typename T>
void EncodeCmMad(uint64_t tid, const T& m, std::span<uint8_t> mad) {
  EncodeMadHeader(CmMadHeader(kCmAttrOf<T>, tid), mad);
  EncodeCm(m, mad.subspan(kMadHeaderSize));
}

}  // namespace rocemu::protocol

#endif  // ROCEMU_PROTOCOL_CM_MESSAGES_H_
