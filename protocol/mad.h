// Management datagrams (IBTA vol. 1 ch. 13.4): the 256-byte MAD with its
// 24-byte common header, as carried to and from QP1 (the GSI) in a UD
// SEND_ONLY with DETH Q_Key 0x80010000. Wire order <-> host-order structs;
// no state.
#ifndef ROCEMU_PROTOCOL_MAD_H_
#define ROCEMU_PROTOCOL_MAD_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace rocemu::protocol {

inline constexpr size_t kMadSize = 256;
inline constexpr size_t kMadHeaderSize = 24;
inline constexpr size_t kMadDataSize = kMadSize - kMadHeaderSize;  // 232

// The General Services Interface: QP1 and its well-known Q_Key (13.5.1).
inline constexpr uint32_t kGsiQpn = 1;
inline constexpr uint32_t kGsiQkey = 0x80010000;

inline constexpr uint8_t kMadBaseVersion = 1;

// Management classes (table 142 of vol. 1).
namespace mgmt_class {
inline constexpr uint8_t kSubnLid = 0x01;
inline constexpr uint8_t kSubnAdm = 0x03;
inline constexpr uint8_t kPerfMgt = 0x04;
inline constexpr uint8_t kBm = 0x05;
inline constexpr uint8_t kDevMgt = 0x06;
inline constexpr uint8_t kCm = 0x07;
inline constexpr uint8_t kSnmp = 0x08;
inline constexpr uint8_t kSubnDirected = 0x81;
}  // namespace mgmt_class

// The CM class version rdma_cm and every current CM speak.
inline constexpr uint8_t kCmClassVersion = 2;

// Methods (13.4.5); bit 7 of the method byte is the R (response) bit.
namespace mad_method {
inline constexpr uint8_t kGet = 0x01;
inline constexpr uint8_t kSet = 0x02;
inline constexpr uint8_t kSend = 0x03;
inline constexpr uint8_t kTrap = 0x05;
inline constexpr uint8_t kReport = 0x06;
inline constexpr uint8_t kTrapRepress = 0x07;
inline constexpr uint8_t kGetResp = 0x81;
inline constexpr uint8_t kReportResp = 0x86;
inline constexpr uint8_t kResponseBit = 0x80;
}  // namespace mad_method

// Status field (13.4.7): bit 0 busy, bit 1 redirect, bits 2-4 a code.
namespace mad_status {
inline constexpr uint16_t kSuccess = 0x0000;
inline constexpr uint16_t kBusy = 0x0001;
inline constexpr uint16_t kRedirectRequired = 0x0002;
// Code 1: the base version, the class version or the class itself is not
// supported.
inline constexpr uint16_t kBadVersion = 0x0004;
inline constexpr uint16_t kUnsupportedMethod = 0x0008;
inline constexpr uint16_t kUnsupportedMethodAttr = 0x000C;
inline constexpr uint16_t kInvalidAttrValue = 0x001C;
}  // namespace mad_status

// The MAD common header, host order.
struct MadHeader {
  uint8_t base_version = kMadBaseVersion;
  uint8_t mgmt_class = 0;
  uint8_t class_version = 0;
  uint8_t method = 0;  // with the R bit
  uint16_t status = 0;
  uint16_t class_specific = 0;
  uint64_t tid = 0;
  uint16_t attr_id = 0;
  uint16_t resv = 0;  // kept on parse so that any header re-encodes exactly
  uint32_t attr_mod = 0;

  bool is_response() const { return (method & mad_method::kResponseBit) != 0; }

  friend bool operator==(const MadHeader&, const MadHeader&) = default;
};

// Writes the 24 header bytes at out[0, 24). `out` must hold 24 bytes.
void EncodeMadHeader(const MadHeader& h, std::span<uint8_t> out);
// Reads the header of `mad`; false when fewer than 24 bytes are given.
bool ParseMadHeader(std::span<const uint8_t> mad, MadHeader* out);

// "CM", "SubnAdm", ... or "0x42" style for the decoder and logs.
std::string_view MgmtClassName(uint8_t mgmt_class);
// "Get", "Send", "GetResp", ... ("?" for an unassigned method).
std::string_view MadMethodName(uint8_t method);

}  // namespace rocemu::protocol

#endif  // ROCEMU_PROTOCOL_MAD_H_
