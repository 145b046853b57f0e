// Compile-time checks of the opcode table against the IBTA list (vol. 1
// table 38, annex A17): a wrong entry fails the build, not a test.
#include "protocol/opcode.h"

namespace rocemu::protocol {
namespace {

constexpr bool Is(uint8_t code, std::string_view name, ServiceType service,
                  OpPosition position, uint8_t header_len, bool payload) {
  const OpcodeInfo& i = GetOpcodeInfo(code);
  return i.defined && i.name == name && i.service == service &&
         i.position == position && i.header_len == header_len &&
         i.payload == payload;
}

using enum ServiceType;
using enum OpPosition;

// RC.
static_assert(Is(0x00, "RC_SEND_FIRST", kRc, kFirst, 12, true));
static_assert(Is(0x01, "RC_SEND_MIDDLE", kRc, kMiddle, 12, true));
static_assert(Is(0x02, "RC_SEND_LAST", kRc, kLast, 12, true));
static_assert(Is(0x03, "RC_SEND_LAST_WITH_IMMEDIATE", kRc, kLast, 16, true));
static_assert(Is(0x04, "RC_SEND_ONLY", kRc, kOnly, 12, true));
static_assert(Is(0x05, "RC_SEND_ONLY_WITH_IMMEDIATE", kRc, kOnly, 16, true));
static_assert(Is(0x06, "RC_RDMA_WRITE_FIRST", kRc, kFirst, 12 + 16, true));
static_assert(Is(0x07, "RC_RDMA_WRITE_MIDDLE", kRc, kMiddle, 12, true));
static_assert(Is(0x08, "RC_RDMA_WRITE_LAST", kRc, kLast, 12, true));
static_assert(Is(0x09, "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE", kRc, kLast, 16,
                 true));
static_assert(Is(0x0A, "RC_RDMA_WRITE_ONLY", kRc, kOnly, 12 + 16, true));
static_assert(Is(0x0B, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", kRc, kOnly,
                 12 + 16 + 4, true));
static_assert(Is(0x0C, "RC_RDMA_READ_REQUEST", kRc, kOnly, 12 + 16, false));
static_assert(Is(0x0D, "RC_RDMA_READ_RESPONSE_FIRST", kRc, kFirst, 12 + 4,
                 true));
static_assert(Is(0x0E, "RC_RDMA_READ_RESPONSE_MIDDLE", kRc, kMiddle, 12, true));
static_assert(Is(0x0F, "RC_RDMA_READ_RESPONSE_LAST", kRc, kLast, 12 + 4, true));
static_assert(Is(0x10, "RC_RDMA_READ_RESPONSE_ONLY", kRc, kOnly, 12 + 4, true));
static_assert(Is(0x11, "RC_ACKNOWLEDGE", kRc, kOnly, 12 + 4, false));
static_assert(Is(0x12, "RC_ATOMIC_ACKNOWLEDGE", kRc, kOnly, 12 + 4 + 8, false));
static_assert(Is(0x13, "RC_CMP_SWAP", kRc, kOnly, 12 + 28, false));
static_assert(Is(0x14, "RC_FETCH_ADD", kRc, kOnly, 12 + 28, false));
static_assert(!GetOpcodeInfo(0x15).defined);
static_assert(Is(0x16, "RC_SEND_LAST_WITH_INVALIDATE", kRc, kLast, 16, true));
static_assert(Is(0x17, "RC_SEND_ONLY_WITH_INVALIDATE", kRc, kOnly, 16, true));
static_assert(Is(0x1C, "RC_FLUSH", kRc, kOnly, 12 + 4 + 16, false));
static_assert(Is(0x1D, "RC_ATOMIC_WRITE", kRc, kOnly, 12 + 16, true));
static_assert(GetOpcodeInfo(0x1C).supported && GetOpcodeInfo(0x1D).supported);
static_assert(GetOpcodeInfo(0x1C).engine == Engine::kResponder &&
              GetOpcodeInfo(0x1D).engine == Engine::kResponder);
static_assert(GetOpcodeInfo(0x1C).Has(kExtFeth) &&
              GetOpcodeInfo(0x1C).Has(kExtReth));

// UC: the RC send/write opcodes shifted by 0x20, nothing else.
static_assert(Is(0x20, "UC_SEND_FIRST", kUc, kFirst, 12, true));
static_assert(Is(0x23, "UC_SEND_LAST_WITH_IMMEDIATE", kUc, kLast, 16, true));
static_assert(Is(0x24, "UC_SEND_ONLY", kUc, kOnly, 12, true));
static_assert(Is(0x25, "UC_SEND_ONLY_WITH_IMMEDIATE", kUc, kOnly, 16, true));
static_assert(Is(0x26, "UC_RDMA_WRITE_FIRST", kUc, kFirst, 28, true));
static_assert(Is(0x27, "UC_RDMA_WRITE_MIDDLE", kUc, kMiddle, 12, true));
static_assert(Is(0x29, "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE", kUc, kLast, 16,
                 true));
static_assert(Is(0x2A, "UC_RDMA_WRITE_ONLY", kUc, kOnly, 28, true));
static_assert(Is(0x2B, "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", kUc, kOnly, 32,
                 true));

// RD: defined, rejected.
static_assert(Is(0x40, "RD_SEND_FIRST", kRd, kFirst, 12 + 4 + 8, true));
static_assert(Is(0x4C, "RD_RDMA_READ_REQUEST", kRd, kOnly, 12 + 4 + 8 + 16,
                 false));
static_assert(Is(0x52, "RD_ATOMIC_ACKNOWLEDGE", kRd, kOnly, 12 + 4 + 4 + 8,
                 false));
static_assert(Is(0x55, "RD_RESYNC", kRd, kOnly, 12 + 4 + 8, false));

// UD.
static_assert(Is(0x64, "UD_SEND_ONLY", kUd, kOnly, 12 + 8, true));
static_assert(Is(0x65, "UD_SEND_ONLY_WITH_IMMEDIATE", kUd, kOnly, 12 + 8 + 4,
                 true));

// XRC: RC + 0xA0, an XRCETH (4 bytes) after the BTH of every request.
static_assert(Is(0xA0, "XRC_SEND_FIRST", kXrc, kFirst, 12 + 4, true));
static_assert(Is(0xA5, "XRC_SEND_ONLY_WITH_IMMEDIATE", kXrc, kOnly, 12 + 4 + 4,
                 true));
static_assert(Is(0xA6, "XRC_RDMA_WRITE_FIRST", kXrc, kFirst, 12 + 4 + 16,
                 true));
static_assert(Is(0xA7, "XRC_RDMA_WRITE_MIDDLE", kXrc, kMiddle, 12 + 4, true));
static_assert(Is(0xAB, "XRC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", kXrc, kOnly,
                 12 + 4 + 16 + 4, true));
static_assert(Is(0xAC, "XRC_RDMA_READ_REQUEST", kXrc, kOnly, 12 + 4 + 16,
                 false));
static_assert(Is(0xAD, "XRC_RDMA_READ_RESPONSE_FIRST", kXrc, kFirst, 12 + 4,
                 true));
static_assert(Is(0xAE, "XRC_RDMA_READ_RESPONSE_MIDDLE", kXrc, kMiddle, 12,
                 true));
static_assert(Is(0xB1, "XRC_ACKNOWLEDGE", kXrc, kOnly, 12 + 4, false));
static_assert(Is(0xB2, "XRC_ATOMIC_ACKNOWLEDGE", kXrc, kOnly, 12 + 4 + 8,
                 false));
static_assert(Is(0xB3, "XRC_CMP_SWAP", kXrc, kOnly, 12 + 4 + 28, false));
static_assert(Is(0xB4, "XRC_FETCH_ADD", kXrc, kOnly, 12 + 4 + 28, false));
static_assert(!GetOpcodeInfo(0xB5).defined);
static_assert(Is(0xB7, "XRC_SEND_ONLY_WITH_INVALIDATE", kXrc, kOnly, 12 + 4 + 4,
                 true));
// Every XRC opcode is its RC twin's + 0xA0 with the XRCETH added to
// requests and nothing else changed.
constexpr bool XrcMirrorsRc() {
  for (int rc = 0; rc <= 0x17; ++rc) {
    const OpcodeInfo& r = kOpcodeTable[rc];
    const OpcodeInfo& x = kOpcodeTable[rc + 0xA0];
    if (r.defined != x.defined) return false;
    if (!r.defined) continue;
    const bool request = r.kind == OpKind::kRequest;
    if (x.ext != (r.ext | (request ? kExtXrceth : 0)) ||
        x.operation != r.operation || x.position != r.position ||
        x.kind != r.kind || x.payload != r.payload || !x.supported) {
      return false;
    }
  }
  return true;
}
static_assert(XrcMirrorsRc());

// CNP 0x81; 0x80 is reserved.
static_assert(Is(0x81, "CNP", kCnp, kOnly, 12 + 16, false));
static_assert(GetOpcodeInfo(0x81).engine == Engine::kCongestion);
static_assert(!GetOpcodeInfo(0x80).defined);

constexpr int CountDefined(ServiceType s, bool supported_only) {
  int n = 0;
  for (const OpcodeInfo& i : kOpcodeTable) {
    if (i.defined && i.service == s && (!supported_only || i.supported)) ++n;
  }
  return n;
}
static_assert(CountDefined(kRc, false) == 25);
static_assert(CountDefined(kRc, true) == 25);
static_assert(CountDefined(kUc, false) == 12);
static_assert(CountDefined(kRd, false) == 22);
static_assert(CountDefined(kRd, true) == 0);
static_assert(CountDefined(kUd, false) == 2);
static_assert(CountDefined(kCnp, false) == 1);
static_assert(CountDefined(kXrc, true) == 23);

// The transport service is the opcode's top three bits (table 38), and every
// table fact agrees with itself: supported entries have an engine, requests go
// to the responder, responses and ACKs to the completer, and only entries
// with payload or an ImmDt/IETH are sends or writes.
constexpr bool TableIsConsistent() {
  for (int code = 0; code < 256; ++code) {
    const OpcodeInfo& i = kOpcodeTable[code];
    if (!i.defined) {
      if (!i.name.empty() || i.supported || i.header_len != 0) return false;
      continue;
    }
    const int prefix = code >> 5;
    const ServiceType expected = prefix == 0   ? kRc
                                 : prefix == 1 ? kUc
                                 : prefix == 2 ? kRd
                                 : prefix == 3 ? kUd
                                 : prefix == 4 ? kCnp
                                 : prefix == 5 ? kXrc
                                               : kUnknown;
    if (i.service != expected) return false;
    if (i.header_len % 4 != 0) return false;
    if (i.supported) {
      if (i.engine == Engine::kNone) return false;
      if (i.kind == OpKind::kRequest && i.engine != Engine::kResponder) {
        return false;
      }
      if ((i.kind == OpKind::kReadResponse || i.kind == OpKind::kAck) &&
          i.engine != Engine::kCompleter) {
        return false;
      }
    }
    if ((i.HasImmediate() || i.HasInvalidate()) && !i.IsLast()) return false;
    if (i.Has(kExtReth) && i.operation == Operation::kWrite && !i.IsFirst()) {
      return false;
    }
  }
  return true;
}
static_assert(TableIsConsistent());

}  // namespace
}  // namespace rocemu::protocol
