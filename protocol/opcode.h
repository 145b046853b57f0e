// The one table of BTH opcode facts (IBTA vol. 1 table 38, and the RoCEv2 CNP
// of annex A17). Everything that asks "which headers, which engine, first or
// last" reads this table; nothing re-derives it from opcode bits.
//
// Classification decisions:
//  - RD (0x40-0x55) is defined but unsupported: RoCEv2 has no RD service, so
//    the parser rejects it with kUnsupportedOpcode.
//  - FLUSH (0x1C: FETH + RETH, no payload) and ATOMIC_WRITE (0x1D: RETH + 8
//    payload bytes) of IBTA 1.5 are RC requests. Both are answered by an
//    RDMA READ RESPONSE ONLY without payload (as Linux rxe answers them), so
//    the requester counts them among its outstanding READ/atomic requests.
//  - 0x81 is the CNP (annex A17.9.3). 0x80 is not listed anywhere and stays
//    reserved (defined = false), as do 0x82-0x9F, 0xB5, 0xB8-0xBF and the
//    manufacturer-specific range 0xC0-0xFF.
//  - XRC (0xA0-0xB7, annex A14) mirrors RC's SEND/WRITE/READ/atomic opcodes
//    at RC + 0xA0. Every request carries the XRCETH (the XRC SRQ it is for)
//    right after the BTH; responses and ACKs carry none, as RC's. XRC has
//    no FLUSH or ATOMIC_WRITE opcode.
#ifndef ROCEMU_PROTOCOL_OPCODE_H_
#define ROCEMU_PROTOCOL_OPCODE_H_

#include <array>
#include <cstdint>
#include <string_view>

namespace rocemu::protocol {

// Extension headers, as bits; on the wire they always appear in this order
// (kExtXrceth, only on XRC requests, and kExtFeth, only on FLUSH, come right
// after the BTH; no opcode has both).
enum ExtHeader : uint16_t {
  kExtRdeth = 1 << 0,
  kExtDeth = 1 << 1,
  kExtReth = 1 << 2,
  kExtAtomicEth = 1 << 3,
  kExtAeth = 1 << 4,
  kExtAtomicAckEth = 1 << 5,
  kExtImmDt = 1 << 6,
  kExtIeth = 1 << 7,
  kExtCnpPad = 1 << 8,   // the 16 reserved bytes that follow a CNP's BTH
  kExtFeth = 1 << 9,     // FLUSH extended transport header (IBTA 1.5)
  kExtXrceth = 1 << 10,  // XRC extended transport header (annex A14)
};

// Wire sizes of the transport headers, bytes.
inline constexpr uint8_t kBthLen = 12;
inline constexpr uint8_t kRdethLen = 4;
inline constexpr uint8_t kDethLen = 8;
inline constexpr uint8_t kRethLen = 16;
inline constexpr uint8_t kAtomicEthLen = 28;
inline constexpr uint8_t kAethLen = 4;
inline constexpr uint8_t kAtomicAckEthLen = 8;
inline constexpr uint8_t kImmDtLen = 4;
inline constexpr uint8_t kIethLen = 4;
inline constexpr uint8_t kCnpPadLen = 16;
inline constexpr uint8_t kFethLen = 4;
inline constexpr uint8_t kXrcethLen = 4;
inline constexpr uint8_t kIcrcLen = 4;

enum class ServiceType : uint8_t { kRc, kUc, kRd, kUd, kCnp, kXrc, kUnknown };
enum class OpPosition : uint8_t { kNone, kFirst, kMiddle, kLast, kOnly };
enum class OpKind : uint8_t { kNone, kRequest, kReadResponse, kAck, kCnp };
// Which engine consumes the packet on receive.
enum class Engine : uint8_t { kNone, kResponder, kCompleter, kCongestion };
enum class Operation : uint8_t {
  kNone,
  kSend,
  kWrite,
  kReadRequest,
  kReadResponse,
  kAcknowledge,
  kAtomicAcknowledge,
  kCompareSwap,
  kFetchAdd,
  kCnp,
  kAtomicWrite,  // RDMA ATOMIC WRITE (IBTA 1.5)
  kFlush,        // RDMA FLUSH (IBTA 1.5)
  kOther,        // defined by IBTA but not implemented by rocemu (RD)
};

struct OpcodeInfo {
  std::string_view
      name;              // IBTA spelling, e.g. "RC_SEND_FIRST"; "" if undefined
  bool defined = false;  // listed by IBTA / RoCEv2
  bool supported = false;  // rocemu handles it (RD and reserved are rejected)
  ServiceType service = ServiceType::kUnknown;
  Operation operation = Operation::kNone;
  OpKind kind = OpKind::kNone;
  OpPosition position = OpPosition::kNone;
  Engine engine = Engine::kNone;
  uint16_t ext = 0;        // ExtHeader bits
  uint8_t header_len = 0;  // BTH + extension headers, bytes
  bool payload = false;    // may carry payload

  constexpr bool Has(ExtHeader h) const { return (ext & h) != 0; }
  constexpr bool HasImmediate() const { return Has(kExtImmDt); }
  constexpr bool HasInvalidate() const { return Has(kExtIeth); }
  constexpr bool IsFirst() const {
    return position == OpPosition::kFirst || position == OpPosition::kOnly;
  }
  constexpr bool IsLast() const {
    return position == OpPosition::kLast || position == OpPosition::kOnly;
  }
};

namespace opcode_internal {

constexpr uint8_t ExtLen(uint16_t ext) {
  uint8_t len = kBthLen;
  if (ext & kExtRdeth) len += kRdethLen;
  if (ext & kExtDeth) len += kDethLen;
  if (ext & kExtReth) len += kRethLen;
  if (ext & kExtAtomicEth) len += kAtomicEthLen;
  if (ext & kExtAeth) len += kAethLen;
  if (ext & kExtAtomicAckEth) len += kAtomicAckEthLen;
  if (ext & kExtImmDt) len += kImmDtLen;
  if (ext & kExtIeth) len += kIethLen;
  if (ext & kExtCnpPad) len += kCnpPadLen;
  if (ext & kExtFeth) len += kFethLen;
  if (ext & kExtXrceth) len += kXrcethLen;
  return len;
}

constexpr OpKind KindOf(Operation op) {
  switch (op) {
    case Operation::kReadResponse:
      return OpKind::kReadResponse;
    case Operation::kAcknowledge:
    case Operation::kAtomicAcknowledge:
      return OpKind::kAck;
    case Operation::kCnp:
      return OpKind::kCnp;
    default:
      return OpKind::kRequest;
  }
}

constexpr Engine EngineOf(OpKind kind) {
  switch (kind) {
    case OpKind::kRequest:
      return Engine::kResponder;
    case OpKind::kReadResponse:
    case OpKind::kAck:
      return Engine::kCompleter;
    case OpKind::kCnp:
      return Engine::kCongestion;
    default:
      return Engine::kNone;
  }
}

struct Row {
  uint8_t code;
  std::string_view name;
  bool supported;
  ServiceType service;
  Operation operation;
  OpPosition position;
  uint16_t ext;
  bool payload;
};

using enum ServiceType;
using enum OpPosition;
using O = Operation;

// IBTA vol. 1 table 38 (+ IBTA 1.5 FLUSH/ATOMIC_WRITE, + annex A17 CNP,
// + annex A14 XRC).
inline constexpr Row kRows[] = {
    // Reliable Connection.
    {0x00, "RC_SEND_FIRST", true, kRc, O::kSend, kFirst, 0, true},
    {0x01, "RC_SEND_MIDDLE", true, kRc, O::kSend, kMiddle, 0, true},
    {0x02, "RC_SEND_LAST", true, kRc, O::kSend, kLast, 0, true},
    {0x03, "RC_SEND_LAST_WITH_IMMEDIATE", true, kRc, O::kSend, kLast, kExtImmDt,
     true},
    {0x04, "RC_SEND_ONLY", true, kRc, O::kSend, kOnly, 0, true},
    {0x05, "RC_SEND_ONLY_WITH_IMMEDIATE", true, kRc, O::kSend, kOnly, kExtImmDt,
     true},
    {0x06, "RC_RDMA_WRITE_FIRST", true, kRc, O::kWrite, kFirst, kExtReth, true},
    {0x07, "RC_RDMA_WRITE_MIDDLE", true, kRc, O::kWrite, kMiddle, 0, true},
    {0x08, "RC_RDMA_WRITE_LAST", true, kRc, O::kWrite, kLast, 0, true},
    {0x09, "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE", true, kRc, O::kWrite, kLast,
     kExtImmDt, true},
    {0x0A, "RC_RDMA_WRITE_ONLY", true, kRc, O::kWrite, kOnly, kExtReth, true},
    {0x0B, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", true, kRc, O::kWrite, kOnly,
     kExtReth | kExtImmDt, true},
    {0x0C, "RC_RDMA_READ_REQUEST", true, kRc, O::kReadRequest, kOnly, kExtReth,
     false},
    {0x0D, "RC_RDMA_READ_RESPONSE_FIRST", true, kRc, O::kReadResponse, kFirst,
     kExtAeth, true},
    {0x0E, "RC_RDMA_READ_RESPONSE_MIDDLE", true, kRc, O::kReadResponse, kMiddle,
     0, true},
    {0x0F, "RC_RDMA_READ_RESPONSE_LAST", true, kRc, O::kReadResponse, kLast,
     kExtAeth, true},
    {0x10, "RC_RDMA_READ_RESPONSE_ONLY", true, kRc, O::kReadResponse, kOnly,
     kExtAeth, true},
    {0x11, "RC_ACKNOWLEDGE", true, kRc, O::kAcknowledge, kOnly, kExtAeth,
     false},
    {0x12, "RC_ATOMIC_ACKNOWLEDGE", true, kRc, O::kAtomicAcknowledge, kOnly,
     kExtAeth | kExtAtomicAckEth, false},
    {0x13, "RC_CMP_SWAP", true, kRc, O::kCompareSwap, kOnly, kExtAtomicEth,
     false},
    {0x14, "RC_FETCH_ADD", true, kRc, O::kFetchAdd, kOnly, kExtAtomicEth,
     false},
    {0x16, "RC_SEND_LAST_WITH_INVALIDATE", true, kRc, O::kSend, kLast, kExtIeth,
     true},
    {0x17, "RC_SEND_ONLY_WITH_INVALIDATE", true, kRc, O::kSend, kOnly, kExtIeth,
     true},
    {0x1C, "RC_FLUSH", true, kRc, O::kFlush, kOnly, kExtFeth | kExtReth, false},
    {0x1D, "RC_ATOMIC_WRITE", true, kRc, O::kAtomicWrite, kOnly, kExtReth,
     true},
    // Unreliable Connection.
    {0x20, "UC_SEND_FIRST", true, kUc, O::kSend, kFirst, 0, true},
    {0x21, "UC_SEND_MIDDLE", true, kUc, O::kSend, kMiddle, 0, true},
    {0x22, "UC_SEND_LAST", true, kUc, O::kSend, kLast, 0, true},
    {0x23, "UC_SEND_LAST_WITH_IMMEDIATE", true, kUc, O::kSend, kLast, kExtImmDt,
     true},
    {0x24, "UC_SEND_ONLY", true, kUc, O::kSend, kOnly, 0, true},
    {0x25, "UC_SEND_ONLY_WITH_IMMEDIATE", true, kUc, O::kSend, kOnly, kExtImmDt,
     true},
    {0x26, "UC_RDMA_WRITE_FIRST", true, kUc, O::kWrite, kFirst, kExtReth, true},
    {0x27, "UC_RDMA_WRITE_MIDDLE", true, kUc, O::kWrite, kMiddle, 0, true},
    {0x28, "UC_RDMA_WRITE_LAST", true, kUc, O::kWrite, kLast, 0, true},
    {0x29, "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE", true, kUc, O::kWrite, kLast,
     kExtImmDt, true},
    {0x2A, "UC_RDMA_WRITE_ONLY", true, kUc, O::kWrite, kOnly, kExtReth, true},
    {0x2B, "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", true, kUc, O::kWrite, kOnly,
     kExtReth | kExtImmDt, true},
    // Reliable Datagram: defined, not carried by RoCEv2.
    {0x40, "RD_SEND_FIRST", false, kRd, O::kOther, kFirst, kExtRdeth | kExtDeth,
     true},
    {0x41, "RD_SEND_MIDDLE", false, kRd, O::kOther, kMiddle,
     kExtRdeth | kExtDeth, true},
    {0x42, "RD_SEND_LAST", false, kRd, O::kOther, kLast, kExtRdeth | kExtDeth,
     true},
    {0x43, "RD_SEND_LAST_WITH_IMMEDIATE", false, kRd, O::kOther, kLast,
     kExtRdeth | kExtDeth | kExtImmDt, true},
    {0x44, "RD_SEND_ONLY", false, kRd, O::kOther, kOnly, kExtRdeth | kExtDeth,
     true},
    {0x45, "RD_SEND_ONLY_WITH_IMMEDIATE", false, kRd, O::kOther, kOnly,
     kExtRdeth | kExtDeth | kExtImmDt, true},
    {0x46, "RD_RDMA_WRITE_FIRST", false, kRd, O::kOther, kFirst,
     kExtRdeth | kExtDeth | kExtReth, true},
    {0x47, "RD_RDMA_WRITE_MIDDLE", false, kRd, O::kOther, kMiddle,
     kExtRdeth | kExtDeth, true},
    {0x48, "RD_RDMA_WRITE_LAST", false, kRd, O::kOther, kLast,
     kExtRdeth | kExtDeth, true},
    {0x49, "RD_RDMA_WRITE_LAST_WITH_IMMEDIATE", false, kRd, O::kOther, kLast,
     kExtRdeth | kExtDeth | kExtImmDt, true},
    {0x4A, "RD_RDMA_WRITE_ONLY", false, kRd, O::kOther, kOnly,
     kExtRdeth | kExtDeth | kExtReth, true},
    {0x4B, "RD_RDMA_WRITE_ONLY_WITH_IMMEDIATE", false, kRd, O::kOther, kOnly,
     kExtRdeth | kExtDeth | kExtReth | kExtImmDt, true},
    {0x4C, "RD_RDMA_READ_REQUEST", false, kRd, O::kOther, kOnly,
     kExtRdeth | kExtDeth | kExtReth, false},
    {0x4D, "RD_RDMA_READ_RESPONSE_FIRST", false, kRd, O::kOther, kFirst,
     kExtRdeth | kExtAeth, true},
    {0x4E, "RD_RDMA_READ_RESPONSE_MIDDLE", false, kRd, O::kOther, kMiddle,
     kExtRdeth, true},
    {0x4F, "RD_RDMA_READ_RESPONSE_LAST", false, kRd, O::kOther, kLast,
     kExtRdeth | kExtAeth, true},
    {0x50, "RD_RDMA_READ_RESPONSE_ONLY", false, kRd, O::kOther, kOnly,
     kExtRdeth | kExtAeth, true},
    {0x51, "RD_ACKNOWLEDGE", false, kRd, O::kOther, kOnly, kExtRdeth | kExtAeth,
     false},
    {0x52, "RD_ATOMIC_ACKNOWLEDGE", false, kRd, O::kOther, kOnly,
     kExtRdeth | kExtAeth | kExtAtomicAckEth, false},
    {0x53, "RD_CMP_SWAP", false, kRd, O::kOther, kOnly,
     kExtRdeth | kExtDeth | kExtAtomicEth, false},
    {0x54, "RD_FETCH_ADD", false, kRd, O::kOther, kOnly,
     kExtRdeth | kExtDeth | kExtAtomicEth, false},
    {0x55, "RD_RESYNC", false, kRd, O::kOther, kOnly, kExtRdeth | kExtDeth,
     false},
    // Unreliable Datagram.
    {0x64, "UD_SEND_ONLY", true, kUd, O::kSend, kOnly, kExtDeth, true},
    {0x65, "UD_SEND_ONLY_WITH_IMMEDIATE", true, kUd, O::kSend, kOnly,
     kExtDeth | kExtImmDt, true},
    // RoCEv2 Congestion Notification Packet (annex A17.9.3).
    {0x81, "CNP", true, kCnp, O::kCnp, kOnly, kExtCnpPad, false},
    // eXtended Reliable Connection (annex A14): RC + 0xA0, requests with
    // an XRCETH.
    {0xA0, "XRC_SEND_FIRST", true, kXrc, O::kSend, kFirst, kExtXrceth, true},
    {0xA1, "XRC_SEND_MIDDLE", true, kXrc, O::kSend, kMiddle, kExtXrceth, true},
    {0xA2, "XRC_SEND_LAST", true, kXrc, O::kSend, kLast, kExtXrceth, true},
    {0xA3, "XRC_SEND_LAST_WITH_IMMEDIATE", true, kXrc, O::kSend, kLast,
     kExtXrceth | kExtImmDt, true},
    {0xA4, "XRC_SEND_ONLY", true, kXrc, O::kSend, kOnly, kExtXrceth, true},
    {0xA5, "XRC_SEND_ONLY_WITH_IMMEDIATE", true, kXrc, O::kSend, kOnly,
     kExtXrceth | kExtImmDt, true},
    {0xA6, "XRC_RDMA_WRITE_FIRST", true, kXrc, O::kWrite, kFirst,
     kExtXrceth | kExtReth, true},
    {0xA7, "XRC_RDMA_WRITE_MIDDLE", true, kXrc, O::kWrite, kMiddle, kExtXrceth,
     true},
    {0xA8, "XRC_RDMA_WRITE_LAST", true, kXrc, O::kWrite, kLast, kExtXrceth,
     true},
    {0xA9, "XRC_RDMA_WRITE_LAST_WITH_IMMEDIATE", true, kXrc, O::kWrite, kLast,
     kExtXrceth | kExtImmDt, true},
    {0xAA, "XRC_RDMA_WRITE_ONLY", true, kXrc, O::kWrite, kOnly,
     kExtXrceth | kExtReth, true},
    {0xAB, "XRC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", true, kXrc, O::kWrite, kOnly,
     kExtXrceth | kExtReth | kExtImmDt, true},
    {0xAC, "XRC_RDMA_READ_REQUEST", true, kXrc, O::kReadRequest, kOnly,
     kExtXrceth | kExtReth, false},
    {0xAD, "XRC_RDMA_READ_RESPONSE_FIRST", true, kXrc, O::kReadResponse, kFirst,
     kExtAeth, true},
    {0xAE, "XRC_RDMA_READ_RESPONSE_MIDDLE", true, kXrc, O::kReadResponse,
     kMiddle, 0, true},
    {0xAF, "XRC_RDMA_READ_RESPONSE_LAST", true, kXrc, O::kReadResponse, kLast,
     kExtAeth, true},
    {0xB0, "XRC_RDMA_READ_RESPONSE_ONLY", true, kXrc, O::kReadResponse, kOnly,
     kExtAeth, true},
    {0xB1, "XRC_ACKNOWLEDGE", true, kXrc, O::kAcknowledge, kOnly, kExtAeth,
     false},
    {0xB2, "XRC_ATOMIC_ACKNOWLEDGE", true, kXrc, O::kAtomicAcknowledge, kOnly,
     kExtAeth | kExtAtomicAckEth, false},
    {0xB3, "XRC_CMP_SWAP", true, kXrc, O::kCompareSwap, kOnly,
     kExtXrceth | kExtAtomicEth, false},
    {0xB4, "XRC_FETCH_ADD", true, kXrc, O::kFetchAdd, kOnly,
     kExtXrceth | kExtAtomicEth, false},
    {0xB6, "XRC_SEND_LAST_WITH_INVALIDATE", true, kXrc, O::kSend, kLast,
     kExtXrceth | kExtIeth, true},
    {0xB7, "XRC_SEND_ONLY_WITH_INVALIDATE", true, kXrc, O::kSend, kOnly,
     kExtXrceth | kExtIeth, true},
};

constexpr std::array<OpcodeInfo, 256> BuildTable() {
  std::array<OpcodeInfo, 256> table{};
  for (const Row& r : kRows) {
    OpcodeInfo& info = table[r.code];
    info.name = r.name;
    info.defined = true;
    info.supported = r.supported;
    info.service = r.service;
    info.operation = r.operation;
    // RD keeps its request/response role so a dissector can still describe
    // it.
    if (r.operation == O::kOther) {
      const bool ack = (r.ext & kExtAeth) != 0;
      info.kind =
          ack ? ((r.code == 0x51 || r.code == 0x52) ? OpKind::kAck
                                                    : OpKind::kReadResponse)
              : (r.code == 0x4E ? OpKind::kReadResponse : OpKind::kRequest);
      info.engine = Engine::kNone;
    } else {
      info.kind = KindOf(r.operation);
      info.engine = EngineOf(info.kind);
    }
    info.position = r.position;
    info.ext = r.ext;
    info.header_len = ExtLen(r.ext);
    info.payload = r.payload;
  }
  return table;
}

}  // namespace opcode_internal

inline constexpr std::array<OpcodeInfo, 256> kOpcodeTable =
    opcode_internal::BuildTable();

constexpr const OpcodeInfo& GetOpcodeInfo(uint8_t opcode) {
  return kOpcodeTable[opcode];
}

// Named opcode values, IBTA spelling, for code that builds packets.
enum Opcode : uint8_t {
  kRcSendFirst = 0x00,
  kRcSendMiddle = 0x01,
  kRcSendLast = 0x02,
  kRcSendLastWithImmediate = 0x03,
  kRcSendOnly = 0x04,
  kRcSendOnlyWithImmediate = 0x05,
  kRcRdmaWriteFirst = 0x06,
  kRcRdmaWriteMiddle = 0x07,
  kRcRdmaWriteLast = 0x08,
  kRcRdmaWriteLastWithImmediate = 0x09,
  kRcRdmaWriteOnly = 0x0A,
  kRcRdmaWriteOnlyWithImmediate = 0x0B,
  kRcRdmaReadRequest = 0x0C,
  kRcRdmaReadResponseFirst = 0x0D,
  kRcRdmaReadResponseMiddle = 0x0E,
  kRcRdmaReadResponseLast = 0x0F,
  kRcRdmaReadResponseOnly = 0x10,
  kRcAcknowledge = 0x11,
  kRcAtomicAcknowledge = 0x12,
  kRcCmpSwap = 0x13,
  kRcFetchAdd = 0x14,
  kRcSendLastWithInvalidate = 0x16,
  kRcSendOnlyWithInvalidate = 0x17,
  kRcFlush = 0x1C,
  kRcAtomicWrite = 0x1D,
  kUcSendFirst = 0x20,
  kUcSendMiddle = 0x21,
  kUcSendLast = 0x22,
  kUcSendLastWithImmediate = 0x23,
  kUcSendOnly = 0x24,
  kUcSendOnlyWithImmediate = 0x25,
  kUcRdmaWriteFirst = 0x26,
  kUcRdmaWriteMiddle = 0x27,
  kUcRdmaWriteLast = 0x28,
  kUcRdmaWriteLastWithImmediate = 0x29,
  kUcRdmaWriteOnly = 0x2A,
  kUcRdmaWriteOnlyWithImmediate = 0x2B,
  kRdSendFirst = 0x40,
  kRdResync = 0x55,
  kUdSendOnly = 0x64,
  kUdSendOnlyWithImmediate = 0x65,
  kCnp = 0x81,
  // XRC: the RC opcode + kXrcSendFirst (requests add the XRCETH).
  kXrcSendFirst = 0xA0,
  kXrcRdmaReadRequest = 0xAC,
  kXrcAcknowledge = 0xB1,
  kXrcCmpSwap = 0xB3,
  kXrcSendOnlyWithInvalidate = 0xB7,
};

}  // namespace rocemu::protocol

#endif  // ROCEMU_PROTOCOL_OPCODE_H_
