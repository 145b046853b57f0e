// A QP's story in words, from its error cause, its flight recorder and the
// RNIC's verdicts: one line for rocemu-ctl why, the whole dump for
// rocemu-ctl qp N --why and for the daemon when the QP enters ERR or SQE.
// Control path (formats freely).
#ifndef ROCEMU_NIC_QP_WHY_H_
#define ROCEMU_NIC_QP_WHY_H_

#include <string>

#include "nic/clock.h"
#include "nic/frame_verdict.h"
#include "nic/qp.h"

namespace rocemu::nic {

// What is known of a QP: a live one's, or a failed one's the RNIC keeps
// after it was destroyed (Rnic::FailedQps: a program that fails exits and
// destroys its QPs before anyone asks why).
struct QpStory {
  uint32_t qpn = 0;
  QpType type = QpType::kRc;
  QpState state = QpState::kReset;
  QpErrorCause cause;
  const FlightRecorder* recorder = nullptr;
  bool destroyed = false;
};
QpStory StoryOf(const Qp& qp);

// "retry_exceeded: PSN 0x0004d2 sent 8 times without an ACK (retry_cnt
// 7); packet 57", or "" for a QP that never failed.
std::string QpWhyLine(const QpErrorCause& cause);
inline std::string QpWhyLine(const Qp& qp) {
  return QpWhyLine(qp.error_cause());
}
// The error cause, then the recorder's events oldest first, one per line.
// Times are the RNIC clock's plus `time_base` (the daemon's wall clock at
// its zero), printed in seconds.
std::string QpWhyReport(const QpStory& story, const VerdictLog& log,
                        uint64_t time_base = 0);
inline std::string QpWhyReport(const Qp& qp, const VerdictLog& log,
                               uint64_t time_base = 0) {
  return QpWhyReport(StoryOf(qp), log, time_base);
}
// One recorder event in words (the report's lines, without the time).
std::string DescribeEvent(const RecorderEvent& e, const VerdictLog& log);

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_QP_WHY_H_
