// Field offsets are those of IBTA vol. 1 tables 106-120, counted from the
// first byte of CM data (MAD byte 24). Sub-byte fields are numbered from the
// most significant bit, as the spec draws them.
#include "protocol/cm_messages.h"

#include <algorithm>
#include <cstring>

#include "protocol/wire.h"

namespace rocemu::protocol {
namespace {

// `width` bits of byte `b` starting `offset` bits below its MSB.
constexpr uint8_t GetBits(uint8_t b, int offset, int width) {
  return static_cast<uint8_t>((b >> (8 - offset - width)) &
                              ((1u << width) - 1));
}
// ORs v into those bits (the byte starts zeroed).
inline void PutBits(uint8_t* p, int offset, int width, uint32_t v) {
  *p |= static_cast<uint8_t>((v & ((1u << width) - 1)) << (8 - offset - width));
}

template <size_t N>
void PutBytes(uint8_t* p, const std::array<uint8_t, N>& a) {
  std::memcpy(p, a.data(), N);
}
template <size_t N>
void GetBytes(const uint8_t* p, std::array<uint8_t, N>* a) {
  std::memcpy(a->data(), p, N);
}

// 24-bit value in the high bytes of a 32-bit word, as QPNs and PSNs sit.
inline void Put24(uint8_t* p, uint32_t v) { StoreBe24(p, v & 0xFFFFFF); }

uint8_t* Start(std::span<uint8_t> data) {
  std::memset(data.data(), 0, kMadDataSize);
  return data.data();
}

// The 44-byte path of a REQ.
void EncodePath(const CmPathInfo& path, bool alternate, uint8_t* p) {
  StoreBe16(p + 0, path.local_lid);
  StoreBe16(p + 2, path.remote_lid);
  std::memcpy(p + 4, path.local_gid.data(), 16);
  std::memcpy(p + 20, path.remote_gid.data(), 16);
  StoreBe32(p + 36, (path.flow_label & 0xFFFFF) << 12);
  PutBits(p + 39, 2, 6, path.packet_rate);
  p[40] = path.traffic_class;
  p[41] = path.hop_limit;
  PutBits(p + 42, 0, 4, path.sl);
  PutBits(p + 42, 4, 1, path.subnet_local);
  PutBits(p + 43, 0, 5, path.local_ack_timeout);
  if (alternate) PutBits(p + 43, 5, 1, path.sap_supported);
}

void ParsePath(const uint8_t* p, bool alternate, CmPathInfo* path) {
  path->local_lid = LoadBe16(p + 0);
  path->remote_lid = LoadBe16(p + 2);
  std::memcpy(path->local_gid.data(), p + 4, 16);
  std::memcpy(path->remote_gid.data(), p + 20, 16);
  path->flow_label = LoadBe32(p + 36) >> 12;
  path->packet_rate = GetBits(p[39], 2, 6);
  path->traffic_class = p[40];
  path->hop_limit = p[41];
  path->sl = GetBits(p[42], 0, 4);
  path->subnet_local = GetBits(p[42], 4, 1);
  path->local_ack_timeout = GetBits(p[43], 0, 5);
  path->sap_supported = alternate && GetBits(p[43], 5, 1);
}

}  // namespace

std::string_view CmAttrName(uint16_t attr_id) {
  switch (attr_id) {
    case cm_attr::kClassPortInfo:
      return "ClassPortInfo";
    case cm_attr::kReq:
      return "REQ";
    case cm_attr::kMra:
      return "MRA";
    case cm_attr::kRej:
      return "REJ";
    case cm_attr::kRep:
      return "REP";
    case cm_attr::kRtu:
      return "RTU";
    case cm_attr::kDreq:
      return "DREQ";
    case cm_attr::kDrep:
      return "DREP";
    case cm_attr::kSidrReq:
      return "SIDR_REQ";
    case cm_attr::kSidrRep:
      return "SIDR_REP";
    case cm_attr::kLap:
      return "LAP";
    case cm_attr::kApr:
      return "APR";
    default:
      return "?";
  }
}

std::string_view CmRejReasonName(uint16_t reason) {
  static constexpr std::string_view kNames[] = {
      "?",
      "no QP",
      "no EEC",
      "no resources",
      "timeout",
      "unsupported request",
      "invalid comm ID",
      "invalid comm instance",
      "invalid service ID",
      "invalid transport type",
      "stale connection",
      "RDC does not exist",
      "invalid GID",
      "invalid LID",
      "invalid SL",
      "invalid traffic class",
      "invalid hop limit",
      "invalid packet rate",
      "invalid alternate GID",
      "invalid alternate LID",
      "invalid alternate SL",
      "invalid alternate traffic class",
      "invalid alternate hop limit",
      "invalid alternate packet rate",
      "port CM redirect",
      "port redirect",
      "invalid path MTU",
      "insufficient responder resources",
      "consumer defined",
      "invalid RNR retry count",
      "duplicate local comm ID",
      "invalid class version",
      "invalid flow label",
      "invalid alternate flow label",
  };
  return reason < std::size(kNames) ? kNames[reason] : "?";
}

MadHeader CmMadHeader(uint16_t attr_id, uint64_t tid) {
  MadHeader h;
  h.base_version = kMadBaseVersion;
  h.mgmt_class = mgmt_class::kCm;
  h.class_version = kCmClassVersion;
  h.method = mad_method::kSend;
  h.tid = tid;
  h.attr_id = attr_id;
  return h;
}

// --- REQ (table 106) ---------------------------------------------------------

void EncodeCm(const CmReq& m, std::span<uint8_t> data) {
  uint8_t* p = Start(data);
  StoreBe32(p + 0, m.local_comm_id);
  StoreBe64(p + 8, m.service_id);
  StoreBe64(p + 16, m.local_ca_guid);
  StoreBe32(p + 28, m.local_qkey);
  Put24(p + 32, m.local_qpn);
  p[35] = m.responder_resources;
  Put24(p + 36, m.local_eecn);
  p[39] = m.initiator_depth;
  Put24(p + 40, m.remote_eecn);
  PutBits(p + 43, 0, 5, m.remote_cm_response_timeout);
  PutBits(p + 43, 5, 2, m.transport);
  PutBits(p + 43, 7, 1, m.end_to_end_flow_control);
  Put24(p + 44, m.starting_psn);
  PutBits(p + 47, 0, 5, m.local_cm_response_timeout);
  PutBits(p + 47, 5, 3, m.retry_count);
  StoreBe16(p + 48, m.pkey);
  PutBits(p + 50, 0, 4, m.path_mtu);
  PutBits(p + 50, 4, 1, m.rdc_exists);
  PutBits(p + 50, 5, 3, m.rnr_retry_count);
  PutBits(p + 51, 0, 4, m.max_cm_retries);
  PutBits(p + 51, 4, 1, m.srq);
  PutBits(p + 51, 5, 3, m.extended_transport);
  EncodePath(m.primary, false, p + 52);
  EncodePath(m.alternate, true, p + 96);
  PutBytes(p + 140, m.private_data);
}

bool ParseCm(std::span<const uint8_t> data, CmReq* m) {
  if (data.size() < kMadDataSize) return false;
  const uint8_t* p = data.data();
  m->local_comm_id = LoadBe32(p + 0);
  m->service_id = LoadBe64(p + 8);
  m->local_ca_guid = LoadBe64(p + 16);
  m->local_qkey = LoadBe32(p + 28);
  m->local_qpn = LoadBe24(p + 32);
  m->responder_resources = p[35];
  m->local_eecn = LoadBe24(p + 36);
  m->initiator_depth = p[39];
  m->remote_eecn = LoadBe24(p + 40);
  m->remote_cm_response_timeout = GetBits(p[43], 0, 5);
  m->transport = GetBits(p[43], 5, 2);
  m->end_to_end_flow_control = GetBits(p[43], 7, 1);
  m->starting_psn = LoadBe24(p + 44);
  m->local_cm_response_timeout = GetBits(p[47], 0, 5);
  m->retry_count = GetBits(p[47], 5, 3);
  m->pkey = LoadBe16(p + 48);
  m->path_mtu = GetBits(p[50], 0, 4);
  m->rdc_exists = GetBits(p[50], 4, 1);
  m->rnr_retry_count = GetBits(p[50], 5, 3);
  m->max_cm_retries = GetBits(p[51], 0, 4);
  m->srq = GetBits(p[51], 4, 1);
  m->extended_transport = GetBits(p[51], 5, 3);
  ParsePath(p + 52, false, &m->primary);
  ParsePath(p + 96, true, &m->alternate);
  GetBytes(p + 140, &m->private_data);
  return true;
}

// --- MRA (table 107) ---------------------------------------------------------

void EncodeCm(const CmMra& m, std::span<uint8_t> data) {
  uint8_t* p = Start(data);
  StoreBe32(p + 0, m.local_comm_id);
  StoreBe32(p + 4, m.remote_comm_id);
  PutBits(p + 8, 0, 2, m.message_mraed);
  PutBits(p + 9, 0, 5, m.service_timeout);
  PutBytes(p + 10, m.private_data);
}

bool ParseCm(std::span<const uint8_t> data, CmMra* m) {
  if (data.size() < kMadDataSize) return false;
  const uint8_t* p = data.data();
  m->local_comm_id = LoadBe32(p + 0);
  m->remote_comm_id = LoadBe32(p + 4);
  m->message_mraed = GetBits(p[8], 0, 2);
  m->service_timeout = GetBits(p[9], 0, 5);
  GetBytes(p + 10, &m->private_data);
  return true;
}

// --- REJ (table 108) ---------------------------------------------------------

void EncodeCm(const CmRej& m, std::span<uint8_t> data) {
  uint8_t* p = Start(data);
  StoreBe32(p + 0, m.local_comm_id);
  StoreBe32(p + 4, m.remote_comm_id);
  PutBits(p + 8, 0, 2, m.message_rejected);
  PutBits(p + 9, 0, 7, m.rejected_info_length);
  StoreBe16(p + 10, m.reason);
  PutBytes(p + 12, m.ari);
  PutBytes(p + 84, m.private_data);
}

bool ParseCm(std::span<const uint8_t> data, CmRej* m) {
  if (data.size() < kMadDataSize) return false;
  const uint8_t* p = data.data();
  m->local_comm_id = LoadBe32(p + 0);
  m->remote_comm_id = LoadBe32(p + 4);
  m->message_rejected = GetBits(p[8], 0, 2);
  m->rejected_info_length = GetBits(p[9], 0, 7);
  m->reason = LoadBe16(p + 10);
  GetBytes(p + 12, &m->ari);
  GetBytes(p + 84, &m->private_data);
  return true;
}

// --- REP (table 110) ---------------------------------------------------------

void EncodeCm(const CmRep& m, std::span<uint8_t> data) {
  uint8_t* p = Start(data);
  StoreBe32(p + 0, m.local_comm_id);
  StoreBe32(p + 4, m.remote_comm_id);
  StoreBe32(p + 8, m.local_qkey);
  Put24(p + 12, m.local_qpn);
  Put24(p + 16, m.local_eecn);
  Put24(p + 20, m.starting_psn);
  p[24] = m.responder_resources;
  p[25] = m.initiator_depth;
  PutBits(p + 26, 0, 5, m.target_ack_delay);
  PutBits(p + 26, 5, 2, m.failover_accepted);
  PutBits(p + 26, 7, 1, m.end_to_end_flow_control);
  PutBits(p + 27, 0, 3, m.rnr_retry_count);
  PutBits(p + 27, 3, 1, m.srq);
  StoreBe64(p + 28, m.local_ca_guid);
  PutBytes(p + 36, m.private_data);
}

bool ParseCm(std::span<const uint8_t> data, CmRep* m) {
  if (data.size() < kMadDataSize) return false;
  const uint8_t* p = data.data();
  m->local_comm_id = LoadBe32(p + 0);
  m->remote_comm_id = LoadBe32(p + 4);
  m->local_qkey = LoadBe32(p + 8);
  m->local_qpn = LoadBe24(p + 12);
  m->local_eecn = LoadBe24(p + 16);
  m->starting_psn = LoadBe24(p + 20);
  m->responder_resources = p[24];
  m->initiator_depth = p[25];
  m->target_ack_delay = GetBits(p[26], 0, 5);
  m->failover_accepted = GetBits(p[26], 5, 2);
  m->end_to_end_flow_control = GetBits(p[26], 7, 1);
  m->rnr_retry_count = GetBits(p[27], 0, 3);
  m->srq = GetBits(p[27], 3, 1);
  m->local_ca_guid = LoadBe64(p + 28);
  GetBytes(p + 36, &m->private_data);
  return true;
}

// --- RTU, DREQ, DREP (tables 111-113) ---------------------------------------

void EncodeCm(const CmRtu& m, std::span<uint8_t> data) {
  uint8_t* p = Start(data);
  StoreBe32(p + 0, m.local_comm_id);
  StoreBe32(p + 4, m.remote_comm_id);
  PutBytes(p + 8, m.private_data);
}

bool ParseCm(std::span<const uint8_t> data, CmRtu* m) {
  if (data.size() < kMadDataSize) return false;
  const uint8_t* p = data.data();
  m->local_comm_id = LoadBe32(p + 0);
  m->remote_comm_id = LoadBe32(p + 4);
  GetBytes(p + 8, &m->private_data);
  return true;
}

void EncodeCm(const CmDreq& m, std::span<uint8_t> data) {
  uint8_t* p = Start(data);
  StoreBe32(p + 0, m.local_comm_id);
  StoreBe32(p + 4, m.remote_comm_id);
  Put24(p + 8, m.remote_qpn);
  PutBytes(p + 12, m.private_data);
}

bool ParseCm(std::span<const uint8_t> data, CmDreq* m) {
  if (data.size() < kMadDataSize) return false;
  const uint8_t* p = data.data();
  m->local_comm_id = LoadBe32(p + 0);
  m->remote_comm_id = LoadBe32(p + 4);
  m->remote_qpn = LoadBe24(p + 8);
  GetBytes(p + 12, &m->private_data);
  return true;
}

void EncodeCm(const CmDrep& m, std::span<uint8_t> data) {
  uint8_t* p = Start(data);
  StoreBe32(p + 0, m.local_comm_id);
  StoreBe32(p + 4, m.remote_comm_id);
  PutBytes(p + 8, m.private_data);
}

bool ParseCm(std::span<const uint8_t> data, CmDrep* m) {
  if (data.size() < kMadDataSize) return false;
  const uint8_t* p = data.data();
  m->local_comm_id = LoadBe32(p + 0);
  m->remote_comm_id = LoadBe32(p + 4);
  GetBytes(p + 8, &m->private_data);
  return true;
}

// --- SIDR_REQ, SIDR_REP (tables 119-120) ------------------------------------

void EncodeCm(const CmSidrReq& m, std::span<uint8_t> data) {
  uint8_t* p = Start(data);
  StoreBe32(p + 0, m.request_id);
  StoreBe16(p + 4, m.pkey);
  StoreBe64(p + 8, m.service_id);
  PutBytes(p + 16, m.private_data);
}

bool ParseCm(std::span<const uint8_t> data, CmSidrReq* m) {
  if (data.size() < kMadDataSize) return false;
  const uint8_t* p = data.data();
  m->request_id = LoadBe32(p + 0);
  m->pkey = LoadBe16(p + 4);
  m->service_id = LoadBe64(p + 8);
  GetBytes(p + 16, &m->private_data);
  return true;
}

void EncodeCm(const CmSidrRep& m, std::span<uint8_t> data) {
  uint8_t* p = Start(data);
  StoreBe32(p + 0, m.request_id);
  p[4] = m.status;
  p[5] = m.additional_info_length;
  Put24(p + 8, m.qpn);
  StoreBe64(p + 12, m.service_id);
  StoreBe32(p + 20, m.qkey);
  PutBytes(p + 24, m.additional_info);
  PutBytes(p + 96, m.private_data);
}

bool ParseCm(std::span<const uint8_t> data, CmSidrRep* m) {
  if (data.size() < kMadDataSize) return false;
  const uint8_t* p = data.data();
  m->request_id = LoadBe32(p + 0);
  m->status = p[4];
  m->additional_info_length = p[5];
  m->qpn = LoadBe24(p + 8);
  m->service_id = LoadBe64(p + 12);
  m->qkey = LoadBe32(p + 20);
  GetBytes(p + 24, &m->additional_info);
  GetBytes(p + 96, &m->private_data);
  return true;
}

// --- LAP, APR (tables 115-116) ----------------------------------------------

void EncodeCm(const CmLap& m, std::span<uint8_t> data) {
  uint8_t* p = Start(data);
  StoreBe32(p + 0, m.local_comm_id);
  StoreBe32(p + 4, m.remote_comm_id);
  Put24(p + 12, m.remote_qpn);
  PutBits(p + 15, 0, 5, m.remote_cm_response_timeout);
  StoreBe16(p + 20, m.alt_local_lid);
  StoreBe16(p + 22, m.alt_remote_lid);
  std::memcpy(p + 24, m.alt_local_gid.data(), 16);
  std::memcpy(p + 40, m.alt_remote_gid.data(), 16);
  StoreBe32(p + 56, (m.alt_flow_label & 0xFFFFF) << 12);
  p[59] = m.alt_traffic_class;
  p[60] = m.alt_hop_limit;
  PutBits(p + 61, 2, 6, m.alt_packet_rate);
  PutBits(p + 62, 0, 4, m.alt_sl);
  PutBits(p + 62, 4, 1, m.alt_subnet_local);
  PutBits(p + 63, 0, 5, m.alt_local_ack_timeout);
  PutBytes(p + 64, m.private_data);
}

bool ParseCm(std::span<const uint8_t> data, CmLap* m) {
  if (data.size() < kMadDataSize) return false;
  const uint8_t* p = data.data();
  m->local_comm_id = LoadBe32(p + 0);
  m->remote_comm_id = LoadBe32(p + 4);
  m->remote_qpn = LoadBe24(p + 12);
  m->remote_cm_response_timeout = GetBits(p[15], 0, 5);
  m->alt_local_lid = LoadBe16(p + 20);
  m->alt_remote_lid = LoadBe16(p + 22);
  std::memcpy(m->alt_local_gid.data(), p + 24, 16);
  std::memcpy(m->alt_remote_gid.data(), p + 40, 16);
  // The flow label's 20 bits are followed by 4 reserved bits, then the
  // traffic class byte.
  m->alt_flow_label = LoadBe24(p + 56) >> 4;
  m->alt_traffic_class = p[59];
  m->alt_hop_limit = p[60];
  m->alt_packet_rate = GetBits(p[61], 2, 6);
  m->alt_sl = GetBits(p[62], 0, 4);
  m->alt_subnet_local = GetBits(p[62], 4, 1);
  m->alt_local_ack_timeout = GetBits(p[63], 0, 5);
  GetBytes(p + 64, &m->private_data);
  return true;
}

void EncodeCm(const CmApr& m, std::span<uint8_t> data) {
  uint8_t* p = Start(data);
  StoreBe32(p + 0, m.local_comm_id);
  StoreBe32(p + 4, m.remote_comm_id);
  p[8] = m.additional_info_length;
  p[9] = m.ap_status;
  PutBytes(p + 12, m.additional_info);
  PutBytes(p + 84, m.private_data);
}

bool ParseCm(std::span<const uint8_t> data, CmApr* m) {
  if (data.size() < kMadDataSize) return false;
  const uint8_t* p = data.data();
  m->local_comm_id = LoadBe32(p + 0);
  m->remote_comm_id = LoadBe32(p + 4);
  m->additional_info_length = p[8];
  m->ap_status = p[9];
  GetBytes(p + 12, &m->additional_info);
  GetBytes(p + 84, &m->private_data);
  return true;
}

}  // namespace rocemu::protocol
