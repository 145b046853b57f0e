// Host-order values of the RoCEv2 transport headers (IBTA vol. 1 ch. 9,
// annex A17). Encoding and decoding to wire order lives in the codec; these
// structs carry no wire layout so that the engines never touch byte order.
#ifndef ROCEMU_PROTOCOL_HEADERS_H_
#define ROCEMU_PROTOCOL_HEADERS_H_

#include <cstdint>

namespace rocemu::protocol {

inline constexpr uint32_t kPsnMask = 0x00FFFFFF;
inline constexpr uint32_t kQpnMask = 0x00FFFFFF;
inline constexpr uint16_t kDefaultPKey = 0xFFFF;
inline constexpr uint16_t kRoceV2UdpPort = 4791;

// Base Transport Header, 12 bytes.
struct Bth {
  uint8_t opcode = 0;
  bool se = false;      // solicited event
  bool mig_req = true;  // ConnectX and rxe send M=1 (no APM migration)
  uint8_t pad_cnt = 0;  // filled in by the builder from the payload length
  uint8_t tver = 0;
  uint16_t pkey = kDefaultPKey;
  bool fecn = false;
  bool becn = false;
  uint32_t dest_qp = 0;  // 24 bits
  bool ack_req = false;
  uint32_t psn = 0;  // 24 bits
  // Reserved bits (resv6 after BECN, resv7 after AckReq): zero when sent,
  // kept when parsed so that any captured frame re-encodes byte for byte.
  uint8_t resv6 = 0;
  uint8_t resv7 = 0;

  friend bool operator==(const Bth&, const Bth&) = default;
};

// RDMA Extended Transport Header, 16 bytes.
struct Reth {
  uint64_t va = 0;
  uint32_t rkey = 0;
  uint32_t dma_len = 0;

  friend bool operator==(const Reth&, const Reth&) = default;
};

// AETH syndrome: bits 7..5 select ACK / RNR NAK / NAK, bits 4..0 carry the
// credit count, the RNR timer code or the NAK code.
enum class AethType : uint8_t {
  kAck = 0,
  kRnrNak = 1,
  kReserved = 2,
  kNak = 3
};
enum class NakCode : uint8_t {
  kPsnSequenceError = 0,
  kInvalidRequest = 1,
  kRemoteAccessError = 2,
  kRemoteOperationalError = 3,
  kInvalidRdRequest = 4,
};
// RNR NAK timer field (IBTA vol. 1 table 45): the 5-bit code -> the minimum
// time the requester waits before retrying, in microseconds. Code 0 is the
// longest (655.36 ms), not zero.
inline constexpr uint32_t kRnrNakTimerMicros[32] = {
    655360, 10,    20,    30,     40,     60,     80,     120,
    160,    240,   320,   480,    640,    960,    1280,   1920,
    2560,   3840,  5120,  7680,   10240,  15360,  20480,  30720,
    40960,  61440, 81920, 122880, 163840, 245760, 327680, 491520};
constexpr uint32_t RnrNakTimerMicros(uint8_t code) {
  return kRnrNakTimerMicros[code & 0x1F];
}

// ACK credit field (IBTA vol. 1 table 44): the 5-bit code -> the number of
// receive WQEs the responder has; code 31 means credits are not valid.
inline constexpr uint16_t kAethCreditCount[31] = {
    0,    1,    2,    3,    4,    6,     8,     12,    16,   24,   32,
    48,   64,   96,   128,  192,  256,   384,   512,   768,  1024, 1536,
    2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768};
// The largest credit code whose count does not exceed `wqes`.
constexpr uint8_t AethCreditCode(uint32_t wqes) {
  uint8_t code = 0;
  while (code + 1 < 31 && kAethCreditCount[code + 1] <= wqes) ++code;
  return code;
}
inline constexpr uint8_t kAethCreditInvalid = 0x1F;  // "credits not valid"

// ACK Extended Transport Header, 4 bytes.
struct Aeth {
  uint8_t syndrome = kAethCreditInvalid;
  uint32_t msn = 0;  // 24 bits

  constexpr AethType type() const {
    return static_cast<AethType>((syndrome >> 5) & 0x3);
  }
  constexpr uint8_t value() const { return syndrome & 0x1F; }
  static constexpr uint8_t Ack(uint8_t credit) { return credit & 0x1F; }
  static constexpr uint8_t RnrNak(uint8_t timer_code) {
    return 0x20 | (timer_code & 0x1F);
  }
  static constexpr uint8_t Nak(NakCode code) {
    return 0x60 | (static_cast<uint8_t>(code) & 0x1F);
  }

  friend bool operator==(const Aeth&, const Aeth&) = default;
};

// Datagram Extended Transport Header, 8 bytes.
struct Deth {
  uint32_t qkey = 0;
  uint32_t src_qp = 0;  // 24 bits
  // The reserved byte between Q_Key and SrcQP: zero when sent, kept on
  // receive (and ignored) so that any received frame re-encodes exactly.
  uint8_t resv8 = 0;

  friend bool operator==(const Deth&, const Deth&) = default;
};

// Atomic Extended Transport Header, 28 bytes.
struct AtomicEth {
  uint64_t va = 0;
  uint32_t rkey = 0;
  uint64_t swap_add = 0;
  uint64_t compare = 0;

  friend bool operator==(const AtomicEth&, const AtomicEth&) = default;
};

// Atomic Acknowledge Extended Transport Header, 8 bytes.
struct AtomicAckEth {
  uint64_t orig = 0;

  friend bool operator==(const AtomicAckEth&, const AtomicAckEth&) = default;
};

// FLUSH Extended Transport Header (IBTA 1.5), 4 bytes: the placement type
// in bits 3..0 and the selectivity level in bits 5..4 of the big-endian
// word; the upper 26 bits are reserved.
namespace feth {
// Placement type bits (ibv_wr_flush's `type`, IB_FLUSH_GLOBAL/PERSISTENT).
inline constexpr uint8_t kGlobal = 1 << 0;
inline constexpr uint8_t kPersistent = 1 << 1;
// Selectivity levels (ibv_wr_flush's `level`): the RETH's range, or the
// whole memory region its R_Key names.
inline constexpr uint8_t kRange = 0;
inline constexpr uint8_t kMemoryRegion = 1;
}  // namespace feth

struct Feth {
  uint8_t placement_type = 0;     // 4 bits
  uint8_t selectivity_level = 0;  // 2 bits
  // The reserved bits, zero when sent, kept on receive (and ignored) so
  // that any received frame re-encodes exactly.
  uint32_t reserved = 0;  // 26 bits

  constexpr uint32_t Encode() const {
    return (reserved << 6) | ((selectivity_level & 0x3u) << 4) |
           (placement_type & 0xFu);
  }
  static constexpr Feth Decode(uint32_t w) {
    return Feth{static_cast<uint8_t>(w & 0xF),
                static_cast<uint8_t>((w >> 4) & 0x3), w >> 6};
  }

  friend bool operator==(const Feth&, const Feth&) = default;
};

// XRC Extended Transport Header (annex A14), 4 bytes: 8 reserved bits and
// the 24-bit number of the XRC SRQ the request is for.
struct Xrceth {
  uint32_t srqn = 0;  // 24 bits
  // The reserved byte, zero when sent, kept on receive (and ignored).
  uint8_t resv8 = 0;

  friend bool operator==(const Xrceth&, const Xrceth&) = default;
};

// All extension headers of one packet; which are meaningful is given by the
// opcode's entry in the opcode table.
struct TransportHeaders {
  Bth bth;
  Reth reth;
  Aeth aeth;
  Deth deth;
  AtomicEth atomic;
  AtomicAckEth atomic_ack;
  uint32_t imm = 0;        // ImmDt, as the 32 bits read big-endian
  uint32_t ieth_rkey = 0;  // IETH
  Feth feth;
  Xrceth xrceth;
  // Only for the unsupported RD opcodes, so that tests and fuzzers can build
  // them: RDETH's EE context (24 bits).
  uint32_t rdeth_ee_context = 0;

  friend bool operator==(const TransportHeaders&,
                         const TransportHeaders&) = default;
};

}  // namespace rocemu::protocol

#endif  // ROCEMU_PROTOCOL_HEADERS_H_
