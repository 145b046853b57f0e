// Runs a replay case: builds the RNIC the case describes, feeds the selected
// input frames to Rnic::Receive at their capture times (virtual clock),
// services Transmit and the RNIC's timers between frames and after the last
// one until it is quiet, and writes every frame the RNIC sends to a
// nanosecond pcap stamped with the virtual time. Nothing reads a wall clock
// and nothing is random, so the same case always gives the same bytes.
#ifndef ROCEMU_EMULATOR_REPLAY_REPLAY_RUNNER_H_
#define ROCEMU_EMULATOR_REPLAY_REPLAY_RUNNER_H_

#include <string>

#include "absl/status/statusor.h"
#include "emulator/replay/replay_case.h"

namespace rocemu::replay {

// Returns the summary as JSON text (completions, non-zero device counters,
// QP states, a CRC-32 of every MR's final content), ending in a newline.
// FailedPrecondition when the case cannot be set up on the RNIC (a QPN or
// R_Key it cannot reproduce), ResourceExhausted when the RNIC sends more than
// max_output_frames.
absl::StatusOr<std::string> RunReplay(const ReplayCase& c,
                                      const std::string& out_pcap);

}  // namespace rocemu::replay

#endif  // ROCEMU_EMULATOR_REPLAY_REPLAY_RUNNER_H_
