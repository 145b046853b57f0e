// What a capture says about one frame: the RNIC's verdict on it (looked up
// by packet id in its VerdictLog) and the daemon's own (fault injector,
// congestion point, TX backlog, PFC hold), as pcapng metadata. A frame
// nobody acted on costs one lookup and no formatting.
#ifndef ROCEMU_EMULATOR_CAPTURE_FRAME_NOTES_H_
#define ROCEMU_EMULATOR_CAPTURE_FRAME_NOTES_H_

#include <cstdint>
#include <string>

#include "emulator/capture/pcapng_writer.h"
#include "nic/drop_reason.h"
#include "nic/flight_recorder.h"
#include "nic/frame_verdict.h"

namespace rocemu::capture {

// A verdict of the daemon around the RNIC (reason and arguments as
// nic/frame_verdict.h gives them).
struct DaemonVerdict {
  nic::DropReason reason = nic::DropReason::kNone;
  nic::VerdictAction action = nic::VerdictAction::kNone;
  uint64_t args[3] = {};
};

// The frame's metadata: `dir` and `packet_id` always; the verdict code
// (the RNIC's on a received frame, else the daemon's, else what was done
// to it on the way) and the words of all three when there are any, the
// comment held in *scratch. `on_the_way`: what the daemon did to the
// frame before (a fault injected, an ECN mark), or nullptr.
FrameMeta DescribeFrame(Direction dir, uint64_t packet_id,
                        const nic::VerdictLog* log, const DaemonVerdict* daemon,
                        std::string* scratch,
                        const DaemonVerdict* on_the_way = nullptr);

// Every frame of a QP's flight recorder, oldest first, as pcapng blocks
// (the first kSnapBytes of each, with its length on the wire), with the
// verdicts `log` still holds. Times: the RNIC clock plus `time_base`.
void WriteRecorder(const nic::FlightRecorder* rec, const nic::VerdictLog& log,
                   uint64_t time_base, PcapngWriter& out);

}  // namespace rocemu::capture

#endif  // ROCEMU_EMULATOR_CAPTURE_FRAME_NOTES_H_
