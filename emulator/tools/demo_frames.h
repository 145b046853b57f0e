// The codec demo's frames: a short, self-consistent conversation between two
// hosts that uses every RoCEv2 opcode the builder supports (RC, UC, UD, XRC and
// the CNP), on IPv4, IPv6 and 802.1Q, with pad counts 0-3 and zero-length
// payloads, plus PFC and PAUSE frames. The exchanges are coherent (PSNs
// continuous per QP, ACK MSNs counting completed messages, read responses
// matching their requests, PMTU 256) so stream-level checkers accept them.
#ifndef ROCEMU_EMULATOR_TOOLS_DEMO_FRAMES_H_
#define ROCEMU_EMULATOR_TOOLS_DEMO_FRAMES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "protocol/frame.h"

namespace rocemu::tools {

inline constexpr uint32_t kDemoPmtu = 256;
// The label prefix of the frames of the IBTA 1.5 connection (RC_ATOMIC_WRITE,
// RC_FLUSH and their responses), the demo's last frames.
inline constexpr char kIbta15Connection[] = "IPv4 RC IBTA 1.5";
// The label prefix of the XRC connection's frames (every XRC opcode), after
// the IBTA 1.5 connection's.
inline constexpr char kXrcConnection[] = "IPv4 XRC";

struct DemoFrame {
  std::string label;  // e.g. "IPv4 RC QP 0x12 RC_SEND_FIRST psn=100"
  protocol::FrameKind kind = protocol::FrameKind::kRoce;
  uint8_t opcode = 0;  // BTH opcode of a RoCE frame
  std::vector<uint8_t> bytes;
};

// Builds the frames and checks that each one parses back as built and that
// every supported opcode of the opcode table occurs.
absl::StatusOr<std::vector<DemoFrame>> BuildDemoFrames();

}  // namespace rocemu::tools

#endif  // ROCEMU_EMULATOR_TOOLS_DEMO_FRAMES_H_
