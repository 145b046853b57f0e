#include "nic/qp_why.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nic/completion.h"
#include "nic/qp_state.h"
#include "protocol/opcode.h"

namespace rocemu::nic {
namespace {

std::string Seconds(uint64_t ns) {
  return absl::StrFormat("%u.%09u", ns / 1'000'000'000, ns % 1'000'000'000);
}

std::string OpcodeName(uint8_t opcode) {
  const std::string_view n = protocol::GetOpcodeInfo(opcode).name;
  if (n.empty()) return absl::StrFormat("opcode 0x%02x", opcode);
  return std::string(n.data(), n.size());
}

std::string Cause(DropReason r, const uint64_t* args, uint64_t packet_id) {
  std::string s = absl::StrCat(std::string(DropReasonName(r)), ": ",
                               DescribeReason(r, args));
  if (packet_id != 0) absl::StrAppend(&s, "; packet ", packet_id);
  return s;
}

}  // namespace

QpStory StoryOf(const Qp& qp) {
  return {qp.qpn(),         qp.type(),     qp.state(),
          qp.error_cause(), qp.recorder(), false};
}

std::string QpWhyLine(const QpErrorCause& c) {
  if (c.reason == DropReason::kNone) return "";
  return Cause(c.reason, c.args, c.packet_id);
}

std::string DescribeEvent(const RecorderEvent& e, const VerdictLog& log) {
  switch (e.kind) {
    case RecorderEventKind::kRx:
    case RecorderEventKind::kTx: {
      std::string s =
          absl::StrFormat("%s %7u  %-30s PSN 0x%06x %5u B",
                          e.kind == RecorderEventKind::kRx ? "rx" : "tx", e.id,
                          OpcodeName(e.opcode), e.psn, e.len);
      std::string why;
      if (const FrameVerdict* v = log.Find(e.id)) why = DescribeVerdict(*v);
      if (why.empty() && e.reason != DropReason::kNone) {
        why = std::string(DropReasonText(e.reason));
        if (e.cause != 0) absl::StrAppend(&why, " (packet ", e.cause, ")");
      }
      if (!why.empty()) absl::StrAppend(&s, "  ", why);
      return s;
    }
    case RecorderEventKind::kTimeout:
      return absl::StrFormat(
          "-- ACK timeout: no ACK for PSN 0x%06x (%u retries left)%s", e.psn,
          e.opcode,
          e.cause != 0 ? absl::StrCat("; last sent as packet ", e.cause) : "");
    case RecorderEventKind::kState:
      return absl::StrFormat(
          "-- state %s -> %s: %s%s",
          QpStateName(static_cast<QpState>(e.opcode)),
          QpStateName(static_cast<QpState>(e.psn)),
          std::string(DropReasonName(e.reason)),
          e.cause != 0 ? absl::StrCat(" (packet ", e.cause, ")") : "");
    case RecorderEventKind::kCompletion:
      return absl::StrFormat(
          "-- %s completion wr_id 0x%x %s: %s%s", e.opcode ? "receive" : "send",
          e.id, WcStatusName(static_cast<WcStatus>(e.psn)),
          std::string(DropReasonName(e.reason)),
          e.cause != 0 ? absl::StrCat(" (packet ", e.cause, ")") : "");
    case RecorderEventKind::kNone:
      break;
  }
  return "";
}

std::string QpWhyReport(const QpStory& story, const VerdictLog& log,
                        uint64_t time_base) {
  std::string s = absl::StrFormat(
      "QP 0x%06x (%s) state %s%s", story.qpn, QpTypeName(story.type),
      QpStateName(story.state), story.destroyed ? " (destroyed)" : "");
  const QpErrorCause& c = story.cause;
  if (c.reason != DropReason::kNone) {
    absl::StrAppendFormat(&s, ", left %s at %s s: %s", QpStateName(c.from),
                          Seconds(time_base + c.time), QpWhyLine(c));
  }
  s += "\n";
  const FlightRecorder* rec = story.recorder;
  if (rec == nullptr) {
    absl::StrAppend(&s,
                    "no flight recorder (flight_recorder_events: 0, or "
                    "the QP never reached RTR)\n");
    return s;
  }
  const uint64_t n = std::min<uint64_t>(rec->recorded(), rec->capacity());
  absl::StrAppendFormat(&s, "last %u of %u events (oldest first):\n", n,
                        rec->recorded());
  absl::StrAppend(&s, "  time (s)              packet\n");
  rec->ForEach([&](const RecorderEvent& e, std::span<const uint8_t>) {
    absl::StrAppend(&s, "  ", Seconds(time_base + e.time), "  ",
                    DescribeEvent(e, log), "\n");
  });
  return s;
}

}  // namespace rocemu::nic
