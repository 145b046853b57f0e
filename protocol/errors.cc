#include "protocol/errors.h"

namespace rocemu::protocol {

std::string_view BuildErrorName(BuildError e) {
  switch (e) {
    case BuildError::kOk:
      return "ok";
    case BuildError::kBufferTooSmall:
      return "buffer_too_small";
    case BuildError::kUnknownOpcode:
      return "unknown_opcode";
    case BuildError::kPayloadNotAllowed:
      return "payload_not_allowed";
    case BuildError::kPayloadTooLarge:
      return "payload_too_large";
  }
  return "invalid_build_error";
}

std::string_view ParseErrorName(ParseError e) {
  switch (e) {
    case ParseError::kOk:
      return "ok";
    case ParseError::kTooShort:
      return "too_short";
    case ParseError::kBadIpVersion:
      return "bad_ip_version";
    case ParseError::kBadIhl:
      return "bad_ihl";
    case ParseError::kIpOptions:
      return "ip_options";
    case ParseError::kIpFragment:
      return "ip_fragment";
    case ParseError::kIpReservedFlag:
      return "ip_reserved_flag";
    case ParseError::kIpLengthMismatch:
      return "ip_length_mismatch";
    case ParseError::kBadIpChecksum:
      return "bad_ip_checksum";
    case ParseError::kUdpLengthMismatch:
      return "udp_length_mismatch";
    case ParseError::kBadUdpChecksum:
      return "bad_udp_checksum";
    case ParseError::kBadTver:
      return "bad_tver";
    case ParseError::kUnknownOpcode:
      return "unknown_opcode";
    case ParseError::kUnsupportedOpcode:
      return "unsupported_opcode";
    case ParseError::kHeadersDoNotFit:
      return "headers_do_not_fit";
    case ParseError::kPayloadNotAllowed:
      return "payload_not_allowed";
    case ParseError::kBadPad:
      return "bad_pad";
    case ParseError::kBadIcrc:
      return "bad_icrc";
    case ParseError::kBadMacControl:
      return "bad_mac_control";
  }
  return "invalid_parse_error";
}

}  // namespace rocemu::protocol
