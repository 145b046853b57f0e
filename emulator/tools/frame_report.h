// What the decoder learns about one captured frame: the parser's verdict with
// every check on, the decoded fields (from a second, lenient parse when the
// strict one fails, so that a frame with a bad ICRC still shows its headers),
// and whether its ICRC is valid.
#ifndef ROCEMU_EMULATOR_TOOLS_FRAME_REPORT_H_
#define ROCEMU_EMULATOR_TOOLS_FRAME_REPORT_H_

#include <cstdint>
#include <span>

#include "protocol/frame.h"

namespace rocemu::tools {

enum class IcrcState : uint8_t {
  kNotApplicable,  // not a RoCE frame
  kValid,
  kInvalid,
  kUnknown,  // the frame is too broken to locate or check the ICRC
};

struct FrameReport {
  uint64_t number = 0;  // 1-based, as Wireshark counts
  uint32_t caplen = 0;
  uint32_t wire_len = 0;
  protocol::ParseError error = protocol::ParseError::kOk;  // all checks on
  // True when `view` holds decoded headers: the strict parse succeeded, or a
  // parse without checksum/ICRC verification did.
  bool decoded = false;
  protocol::ParsedFrame view;
  IcrcState icrc = IcrcState::kNotApplicable;

  // Cut short by the capture's snaplen: nothing after caplen can be checked.
  bool truncated() const { return caplen < wire_len; }
  // A valid RoCEv2 frame (ICRC included) or a valid PFC/PAUSE frame.
  bool ok() const;
  // A RoCEv2 or MAC Control frame that the parser rejects; these make
  // rocemu-decode exit 1.
  bool invalid() const;
};

FrameReport AnalyzeFrame(uint64_t number, std::span<const uint8_t> bytes,
                         uint32_t wire_len);

}  // namespace rocemu::tools

#endif  // ROCEMU_EMULATOR_TOOLS_FRAME_REPORT_H_
