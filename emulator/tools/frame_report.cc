#include "emulator/tools/frame_report.h"

namespace rocemu::tools {
namespace {

using protocol::FrameKind;
using protocol::ParseError;
using protocol::ParseOptions;

bool IsCheckedKind(FrameKind k) {
  return k == FrameKind::kRoce || k == FrameKind::kPfc ||
         k == FrameKind::kPause;
}

}  // namespace

bool FrameReport::ok() const {
  return !truncated() && error == ParseError::kOk && IsCheckedKind(view.kind);
}

bool FrameReport::invalid() const {
  if (truncated() || error == ParseError::kOk) return false;
  // The parser records the kind as soon as it has recognised UDP port 4791 or
  // EtherType 0x8808, so a rejected frame of another kind (a runt, an IPv4
  // packet with options) is not mistaken for a broken RoCE frame.
  return IsCheckedKind(view.kind);
}

FrameReport AnalyzeFrame(uint64_t number, std::span<const uint8_t> bytes,
                         uint32_t wire_len) {
  FrameReport r;
  r.number = number;
  r.caplen = static_cast<uint32_t>(bytes.size());
  r.wire_len = wire_len;
  r.error = protocol::ParseFrame(bytes, &r.view);
  if (r.error == ParseError::kOk) {
    r.decoded = true;
    if (r.view.kind == FrameKind::kRoce) r.icrc = IcrcState::kValid;
    return r;
  }

  // Decode the headers without the integrity checks so that the report can
  // still show what the frame claims to be.
  ParseOptions lenient;
  lenient.verify_icrc = false;
  lenient.verify_ip_checksum = false;
  lenient.verify_udp_checksum = false;
  protocol::ParsedFrame view;
  const ParseError lenient_error = protocol::ParseFrame(bytes, &view, lenient);
  r.decoded = lenient_error == ParseError::kOk;
  // On failure the parser leaves the kind it had recognised; keep the view
  // either way since the report prints only the kind when !decoded.
  r.view = view;
  if (!r.decoded || view.kind != FrameKind::kRoce) {
    r.icrc = view.kind == FrameKind::kRoce ? IcrcState::kUnknown
                                           : IcrcState::kNotApplicable;
    return r;
  }
  if (r.error == ParseError::kBadIcrc) {
    r.icrc = IcrcState::kInvalid;
    return r;
  }
  // Rejected for another reason (e.g. an IP checksum): check the ICRC alone.
  ParseOptions icrc_only = lenient;
  icrc_only.verify_icrc = true;
  protocol::ParsedFrame scratch;
  const ParseError icrc_error =
      protocol::ParseFrame(bytes, &scratch, icrc_only);
  r.icrc = icrc_error == ParseError::kOk        ? IcrcState::kValid
           : icrc_error == ParseError::kBadIcrc ? IcrcState::kInvalid
                                                : IcrcState::kUnknown;
  return r;
}

}  // namespace rocemu::tools
