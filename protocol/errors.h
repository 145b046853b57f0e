// Why a frame could not be built or parsed. Hot-path code returns these enums;
// the names are stable snake_case strings for logs, counters and the decoder.
#ifndef ROCEMU_PROTOCOL_ERRORS_H_
#define ROCEMU_PROTOCOL_ERRORS_H_

#include <cstdint>
#include <string_view>

namespace rocemu::protocol {

enum class BuildError : uint8_t {
  kOk,
  kBufferTooSmall,
  kUnknownOpcode,
  kPayloadNotAllowed,
  kPayloadTooLarge,
};
std::string_view BuildErrorName(BuildError e);

enum class ParseError : uint8_t {
  kOk,
  kTooShort,
  kBadIpVersion,
  kBadIhl,
  kIpOptions,
  kIpFragment,
  kIpReservedFlag,  // IPv4 flags bit 0 ("evil bit") must be zero
  kIpLengthMismatch,
  kBadIpChecksum,
  kUdpLengthMismatch,
  kBadUdpChecksum,
  kBadTver,
  kUnknownOpcode,      // reserved opcode value
  kUnsupportedOpcode,  // defined (e.g. RD) but not implemented
  kHeadersDoNotFit,    // frame shorter than the opcode's headers + ICRC
  kPayloadNotAllowed,
  kBadPad,
  kBadIcrc,
  kBadMacControl,  // PAUSE/PFC: bad opcode, DA, VLAN tag, high enable octet
};
inline constexpr int kParseErrorCount =
    static_cast<int>(ParseError::kBadMacControl) + 1;
std::string_view ParseErrorName(ParseError e);

}  // namespace rocemu::protocol

#endif  // ROCEMU_PROTOCOL_ERRORS_H_
