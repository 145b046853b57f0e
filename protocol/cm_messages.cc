// Field offsets are those of IBTA vol. 1 tables 106-120, counted from the
// first byte of CM data (MAD byte 24). Sub-byte fields are numbered from the
// most significant bit, as the spec draws them.
#include "protocol/cm_messages.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "protocol/wire.h"

namespace rocemu::protocol {
namespace {

// `width` bits of byte `b` starting `offset` bits below its MSB.
constexpr uint8_t GetBits(uint8_t b, int offset, int width) {
  return static_cast<uint8_t>((b >> (8 - offset - width)) &
                              ((1u << width) - 1));
}

// Each message's layout is written once, as a Fields() function over one of
// these two: CmWriter stores the fields into zeroed CM data, CmReader loads
// them. Offsets count from the first byte of CM data.
class CmWriter {
 public:
  static constexpr bool kWrites = true;
  explicit CmWriter(uint8_t* p) : p_(p) {}
  void U8(size_t at, uint8_t v) { p_[at] = v; }
  void U16(size_t at, uint16_t v) { StoreBe16(p_ + at, v); }
  // 24 bits in the high bytes of a 32-bit word, as QPNs and PSNs sit.
  void U24(size_t at, uint32_t v) { StoreBe24(p_ + at, v & 0xFFFFFF); }
  void U32(size_t at, uint32_t v) { StoreBe32(p_ + at, v); }
  void U64(size_t at, uint64_t v) { StoreBe64(p_ + at, v); }
  // ORs v into `width` bits of byte `at`, `offset` bits below its MSB.
  void Bits(size_t at, int offset, int width, uint32_t v) {
    p_[at] |=
        static_cast<uint8_t>((v & ((1u << width) - 1)) << (8 - offset - width));
  }
  // A 20-bit flow label in the top bits of the 32-bit word at `at`.
  void FlowLabel(size_t at, uint32_t v) {
    StoreBe32(p_ + at, (v & 0xFFFFF) << 12);
  }
  template <size_t N>
  void Bytes(size_t at, const std::array<uint8_t, N>& a) {
    std::memcpy(p_ + at, a.data(), N);
  }
  // A field this layout does not carry (the reader clears it).
  template <typename T>
  void Absent(const T&) {}

 private:
  uint8_t* p_;
};

class CmReader {
 public:
  static constexpr bool kWrites = false;
  explicit CmReader(const uint8_t* p) : p_(p) {}
  template <typename T>
  void U8(size_t at, T& v) {
    v = p_[at];
  }
  void U16(size_t at, uint16_t& v) { v = LoadBe16(p_ + at); }
  void U24(size_t at, uint32_t& v) { v = LoadBe24(p_ + at); }
  void U32(size_t at, uint32_t& v) { v = LoadBe32(p_ + at); }
  void U64(size_t at, uint64_t& v) { v = LoadBe64(p_ + at); }
  template <typename T>
  void Bits(size_t at, int offset, int width, T& v) {
    v = static_cast<T>(GetBits(p_[at], offset, width));
  }
  void FlowLabel(size_t at, uint32_t& v) { v = LoadBe32(p_ + at) >> 12; }
  template <size_t N>
  void Bytes(size_t at, std::array<uint8_t, N>& a) {
    std::memcpy(a.data(), p_ + at, N);
  }
  template <typename T>
  void Absent(T& v) {
    v = T{};
  }

 private:
  const uint8_t* p_;
};

// A message as the Io sees it: const to the writer.
template <typename T, typename Io>
using Msg = std::conditional_t<Io::kWrites, const T, T>;

// The 44-byte path of a REQ at `at`.
template <typename Io>
void PathFields(Io& io, size_t at, Msg<CmPathInfo, Io>& path, bool alternate) {
  io.U16(at + 0, path.local_lid);
  io.U16(at + 2, path.remote_lid);
  io.Bytes(at + 4, path.local_gid);
  io.Bytes(at + 20, path.remote_gid);
  io.FlowLabel(at + 36, path.flow_label);
  io.Bits(at + 39, 2, 6, path.packet_rate);
  io.U8(at + 40, path.traffic_class);
  io.U8(at + 41, path.hop_limit);
  io.Bits(at + 42, 0, 4, path.sl);
  io.Bits(at + 42, 4, 1, path.subnet_local);
  io.Bits(at + 43, 0, 5, path.local_ack_timeout);
  if (alternate) {
    io.Bits(at + 43, 5, 1, path.sap_supported);
  } else {
    io.Absent(path.sap_supported);
  }
}

// --- REQ (table 106) ---------------------------------------------------------

template <typename Io>
void Fields(Io& io, Msg<CmReq, Io>& m) {
  io.U32(0, m.local_comm_id);
  io.U64(8, m.service_id);
  io.U64(16, m.local_ca_guid);
  io.U32(28, m.local_qkey);
  io.U24(32, m.local_qpn);
  io.U8(35, m.responder_resources);
  io.U24(36, m.local_eecn);
  io.U8(39, m.initiator_depth);
  io.U24(40, m.remote_eecn);
  io.Bits(43, 0, 5, m.remote_cm_response_timeout);
  io.Bits(43, 5, 2, m.transport);
  io.Bits(43, 7, 1, m.end_to_end_flow_control);
  io.U24(44, m.starting_psn);
  io.Bits(47, 0, 5, m.local_cm_response_timeout);
  io.Bits(47, 5, 3, m.retry_count);
  io.U16(48, m.pkey);
  io.Bits(50, 0, 4, m.path_mtu);
  io.Bits(50, 4, 1, m.rdc_exists);
  io.Bits(50, 5, 3, m.rnr_retry_count);
  io.Bits(51, 0, 4, m.max_cm_retries);
  io.Bits(51, 4, 1, m.srq);
  io.Bits(51, 5, 3, m.extended_transport);
  PathFields(io, 52, m.primary, false);
  PathFields(io, 96, m.alternate, true);
  io.Bytes(140, m.private_data);
}

// --- MRA (table 107) ---------------------------------------------------------

template <typename Io>
void Fields(Io& io, Msg<CmMra, Io>& m) {
  io.U32(0, m.local_comm_id);
  io.U32(4, m.remote_comm_id);
  io.Bits(8, 0, 2, m.message_mraed);
  io.Bits(9, 0, 5, m.service_timeout);
  io.Bytes(10, m.private_data);
}

// --- REJ (table 108) ---------------------------------------------------------

template <typename Io>
void Fields(Io& io, Msg<CmRej, Io>& m) {
  io.U32(0, m.local_comm_id);
  io.U32(4, m.remote_comm_id);
  io.Bits(8, 0, 2, m.message_rejected);
  io.Bits(9, 0, 7, m.rejected_info_length);
  io.U16(10, m.reason);
  io.Bytes(12, m.ari);
  io.Bytes(84, m.private_data);
}

// --- REP (table 110) ---------------------------------------------------------

template <typename Io>
void Fields(Io& io, Msg<CmRep, Io>& m) {
  io.U32(0, m.local_comm_id);
  io.U32(4, m.remote_comm_id);
  io.U32(8, m.local_qkey);
  io.U24(12, m.local_qpn);
  io.U24(16, m.local_eecn);
  io.U24(20, m.starting_psn);
  io.U8(24, m.responder_resources);
  io.U8(25, m.initiator_depth);
  io.Bits(26, 0, 5, m.target_ack_delay);
  io.Bits(26, 5, 2, m.failover_accepted);
  io.Bits(26, 7, 1, m.end_to_end_flow_control);
  io.Bits(27, 0, 3, m.rnr_retry_count);
  io.Bits(27, 3, 1, m.srq);
  io.U64(28, m.local_ca_guid);
  io.Bytes(36, m.private_data);
}

// --- RTU, DREQ, DREP (tables 111-113) ---------------------------------------

template <typename Io>
void Fields(Io& io, Msg<CmRtu, Io>& m) {
  io.U32(0, m.local_comm_id);
  io.U32(4, m.remote_comm_id);
  io.Bytes(8, m.private_data);
}

template <typename Io>
void Fields(Io& io, Msg<CmDreq, Io>& m) {
  io.U32(0, m.local_comm_id);
  io.U32(4, m.remote_comm_id);
  io.U24(8, m.remote_qpn);
  io.Bytes(12, m.private_data);
}

template <typename Io>
void Fields(Io& io, Msg<CmDrep, Io>& m) {
  io.U32(0, m.local_comm_id);
  io.U32(4, m.remote_comm_id);
  io.Bytes(8, m.private_data);
}

// --- SIDR_REQ, SIDR_REP (tables 119-120) ------------------------------------

template <typename Io>
void Fields(Io& io, Msg<CmSidrReq, Io>& m) {
  io.U32(0, m.request_id);
  io.U16(4, m.pkey);
  io.U64(8, m.service_id);
  io.Bytes(16, m.private_data);
}

template <typename Io>
void Fields(Io& io, Msg<CmSidrRep, Io>& m) {
  io.U32(0, m.request_id);
  io.U8(4, m.status);
  io.U8(5, m.additional_info_length);
  io.U24(8, m.qpn);
  io.U64(12, m.service_id);
  io.U32(20, m.qkey);
  io.Bytes(24, m.additional_info);
  io.Bytes(96, m.private_data);
}

// --- LAP, APR (tables 115-116) ----------------------------------------------

template <typename Io>
void Fields(Io& io, Msg<CmLap, Io>& m) {
  io.U32(0, m.local_comm_id);
  io.U32(4, m.remote_comm_id);
  io.U24(12, m.remote_qpn);
  io.Bits(15, 0, 5, m.remote_cm_response_timeout);
  io.U16(20, m.alt_local_lid);
  io.U16(22, m.alt_remote_lid);
  io.Bytes(24, m.alt_local_gid);
  io.Bytes(40, m.alt_remote_gid);
  // The flow label's 20 bits, 4 reserved bits, then the traffic class.
  io.FlowLabel(56, m.alt_flow_label);
  io.U8(59, m.alt_traffic_class);
  io.U8(60, m.alt_hop_limit);
  io.Bits(61, 2, 6, m.alt_packet_rate);
  io.Bits(62, 0, 4, m.alt_sl);
  io.Bits(62, 4, 1, m.alt_subnet_local);
  io.Bits(63, 0, 5, m.alt_local_ack_timeout);
  io.Bytes(64, m.private_data);
}

template <typename Io>
void Fields(Io& io, Msg<CmApr, Io>& m) {
  io.U32(0, m.local_comm_id);
  io.U32(4, m.remote_comm_id);
  io.U8(8, m.additional_info_length);
  io.U8(9, m.ap_status);
  io.Bytes(12, m.additional_info);
  io.Bytes(84, m.private_data);
}

template <typename T>
void Encode(const T& m, std::span<uint8_t> data) {
  std::memset(data.data(), 0, kMadDataSize);
  CmWriter w(data.data());
  Fields<CmWriter>(w, m);
}

template <typename T>
bool Parse(std::span<const uint8_t> data, T* m) {
  if (data.size() < kMadDataSize) return false;
  CmReader r(data.data());
  Fields<CmReader>(r, *m);
  return true;
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

void EncodeCm(const CmReq& m, std::span<uint8_t> data) { Encode(m, data); }
bool ParseCm(std::span<const uint8_t> data, CmReq* m) { return Parse(data, m); }
void EncodeCm(const CmMra& m, std::span<uint8_t> data) { Encode(m, data); }
bool ParseCm(std::span<const uint8_t> data, CmMra* m) { return Parse(data, m); }
void EncodeCm(const CmRej& m, std::span<uint8_t> data) { Encode(m, data); }
bool ParseCm(std::span<const uint8_t> data, CmRej* m) { return Parse(data, m); }
void EncodeCm(const CmRep& m, std::span<uint8_t> data) { Encode(m, data); }
bool ParseCm(std::span<const uint8_t> data, CmRep* m) { return Parse(data, m); }
void EncodeCm(const CmRtu& m, std::span<uint8_t> data) { Encode(m, data); }
bool ParseCm(std::span<const uint8_t> data, CmRtu* m) { return Parse(data, m); }
void EncodeCm(const CmDreq& m, std::span<uint8_t> data) { Encode(m, data); }
bool ParseCm(std::span<const uint8_t> data, CmDreq* m) {
  return Parse(data, m);
}
void EncodeCm(const CmDrep& m, std::span<uint8_t> data) { Encode(m, data); }
bool ParseCm(std::span<const uint8_t> data, CmDrep* m) {
  return Parse(data, m);
}
void EncodeCm(const CmSidrReq& m, std::span<uint8_t> data) { Encode(m, data); }
bool ParseCm(std::span<const uint8_t> data, CmSidrReq* m) {
  return Parse(data, m);
}
void EncodeCm(const CmSidrRep& m, std::span<uint8_t> data) { Encode(m, data); }
bool ParseCm(std::span<const uint8_t> data, CmSidrRep* m) {
  return Parse(data, m);
}
void EncodeCm(const CmLap& m, std::span<uint8_t> data) { Encode(m, data); }
bool ParseCm(std::span<const uint8_t> data, CmLap* m) { return Parse(data, m); }
void EncodeCm(const CmApr& m, std::span<uint8_t> data) { Encode(m, data); }
bool ParseCm(std::span<const uint8_t> data, CmApr* m) { return Parse(data, m); }

}  // namespace rocemu::protocol
