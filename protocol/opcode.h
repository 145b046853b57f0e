// The one table of BTH opcode facts (IBTA vol. 1 table 38, and the RoCEv2 CNP
// of annex A17). Everything that asks "which headers, which engine, first or
// last" reads this table; nothing re-derives it from opcode bits.
#ifndef ROCEMU_PROTOCOL_OPCODE_H_
#define ROCEMU_PROTOCOL_OPCODE_H_

#include <array>
#include <cstdint>
#include <string_view>

namespace rocemu::protocol {

// Extension headers, as bits; on the wire they always appear in this order.
enum ExtHeader : uint16_t {
  kExtRdeth = 1 << 0,
  kExtDeth = 1 << 1,
  kExtReth = 1 << 2,
  kExtAtomicEth = 1 << 3,
  kExtAeth = 1 << 4,
  kExtAtomicAckEth = 1 << 5,
  kExtImmDt = 1 << 6,
  kExtIeth = 1 << 7,
  kExtCnpPad = 1 << 8,  // the 16 reserved bytes that follow a CNP's BTH
};

enum class ServiceType : uint8_t { kRc, kUc, kRd, kUd, kCnp, kUnknown };
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
  kOther,  // defined by IBTA but not implemented by rocemu (RD, FLUSH, ...)
};

struct OpcodeInfo {
  std::string_view name;  // IBTA spelling, e.g. "RC_SEND_FIRST"; "" if undefined
  bool defined = false;   // listed by IBTA / RoCEv2
  bool supported = false; // rocemu handles it (RD and reserved are rejected)
  ServiceType service = ServiceType::kUnknown;
  Operation operation = Operation::kNone;
  OpKind kind = OpKind::kNone;
  OpPosition position = OpPosition::kNone;
  Engine engine = Engine::kNone;
  uint16_t ext = 0;        // ExtHeader bits
  uint8_t header_len = 0;  // BTH + extension headers, bytes
  bool payload = false;    // may carry payload
};

// Defined in opcode_table.h as a constexpr std::array<OpcodeInfo, 256>.
constexpr const OpcodeInfo& GetOpcodeInfo(uint8_t opcode);

}  // namespace rocemu::protocol

#endif  // ROCEMU_PROTOCOL_OPCODE_H_
