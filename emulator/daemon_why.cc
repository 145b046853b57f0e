// Why QPs fail, as the daemon tells it: each error completion's cause in
// the log (rate-limited: recorder.log_per_second), each QP the RNIC moved
// to ERR or SQE dumped (its flight recorder as text and pcapng, in
// recorder.dump_dir), and the control socket's `why` (every QP in error,
// one line of cause) and `qp_why` (one QP's dump).
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "emulator/capture/frame_notes.h"
#include "emulator/control/control_server.h"
#include "emulator/daemon.h"
#include "emulator/logging.h"
#include "nic/qp_why.h"
#include "verbs/server/json_writer.h"

namespace rocemu::emulator {
namespace {

// What the RNIC knows of QP `qpn`: live, or destroyed after it failed.
std::optional<nic::QpStory> FindStory(const nic::Rnic& rnic, uint32_t qpn) {
  if (const nic::Qp* qp = rnic.GetQp(qpn)) return nic::StoryOf(*qp);
  if (const nic::QpStory* s = rnic.FindFailedQp(qpn)) return *s;
  return std::nullopt;
}

// The words of a note's cause: the verdict the RNIC still keeps for its
// frame, else the QP's error cause, else the reason's text.
std::string NoteCause(const nic::Rnic& rnic, const nic::ErrorNote& n) {
  std::string s(nic::DropReasonName(n.reason));
  const nic::FrameVerdict* v = rnic.verdicts().Find(n.cause_id);
  const std::optional<nic::QpStory> story = FindStory(rnic, n.qpn);
  const uint64_t* args = nullptr;
  if (v != nullptr && v->reason == n.reason) {
    args = v->args;
  } else if (story.has_value() && story->cause.reason == n.reason) {
    args = story->cause.args;
  }
  if (args != nullptr) {
    absl::StrAppend(&s, ": ", nic::DescribeReason(n.reason, args));
  } else if (n.reason != nic::DropReason::kNone) {
    absl::StrAppend(&s, ": ", nic::DropReasonText(n.reason));
  }
  if (n.cause_id != 0) absl::StrAppend(&s, "; packet ", n.cause_id);
  return s;
}

}  // namespace

bool Daemon::TakeLogToken(nic::TimeNs now) {
  const double rate = config_.recorder.log_per_second;
  if (rate <= 0) return false;
  const double elapsed = static_cast<double>(now - log_refill_at_) / 1e9;
  log_refill_at_ = now;
  log_tokens_ = std::min(rate, log_tokens_ + elapsed * rate);
  if (log_tokens_ < 1) {
    ++log_suppressed_;
    return false;
  }
  log_tokens_ -= 1;
  if (log_suppressed_ != 0) {
    ROCEMU_LOG_WARNING(
        "%u error completion(s) and QP error(s) not logged "
        "(recorder.log_per_second: %u)",
        log_suppressed_, config_.recorder.log_per_second);
    log_suppressed_ = 0;
  }
  return true;
}

void Daemon::ReportErrors(nic::TimeNs now, bool shards) {
  for (size_t i = 0; i < rnics_.size(); ++i) {
    if (rnics_[i] == nullptr) continue;
    if (!shards) {
      ReportRnicErrors(i, rnics_[i]->rnic(), now);
      continue;
    }
    for (auto& s : ports_[i]->shards)
      ReportRnicErrors(i, s->rnic().rnic(), now);
  }
}

void Daemon::ReportRnicErrors(size_t port, nic::Rnic& rnic, nic::TimeNs now) {
  const std::string& name = ports_[port]->config.name;
  rnic.TakeErrorNotes([&](const nic::ErrorNote& n) {
    if (n.qp_error) {
      // An application's own ibv_modify_qp(ERR) (rdma_disconnect does it)
      // is no failure: nothing to explain.
      if (n.reason == nic::DropReason::kModifyToErr) return;
      std::string dump;
      if (std::optional<nic::QpStory> story = FindStory(rnic, n.qpn)) {
        dump = DumpQp(port, rnic, *story, now);
      }
      if (TakeLogToken(now)) {
        ROCEMU_LOG_WARNING("port %s: QP 0x%06x -> %s: %s%s", name, n.qpn,
                           nic::QpStateName(n.state), NoteCause(rnic, n),
                           dump.empty() ? "" : "; dump " + dump);
      }
      return;
    }
    if (TakeLogToken(now)) {
      ROCEMU_LOG_WARNING("port %s: QP 0x%06x %s wr_id 0x%x: %s: %s", name,
                         n.qpn, n.recv ? "receive" : "send", n.wr_id,
                         nic::WcStatusName(n.status), NoteCause(rnic, n));
    }
  });
}

std::string Daemon::DumpQp(size_t port, const nic::Rnic& rnic,
                           const nic::QpStory& qp, nic::TimeNs now) {
  const std::string& dir = config_.recorder.dump_dir;
  if (dir.empty() || qp.recorder == nullptr) return "";
  // The directory and its parents (the default /var/lib/rocemu/why does
  // not exist before the first dump), readable by the daemon's group only:
  // dumps hold the first bytes of frames.
  int made = 0;
  for (size_t slash = dir.find('/', 1); made == 0;
       slash = dir.find('/', slash + 1)) {
    const std::string part =
        slash == std::string::npos ? dir : dir.substr(0, slash);
    if (mkdir(part.c_str(), 0750) != 0 && errno != EEXIST) made = -1;
    if (slash == std::string::npos) break;
  }
  if (made != 0) {
    if (!dump_dir_failed_) {
      ROCEMU_LOG_WARNING("recorder.dump_dir %s: %s", dir, std::strerror(errno));
    }
    dump_dir_failed_ = true;
    return "";
  }
  const uint64_t wall = wall_base_ns_ + now;
  const std::string base =
      absl::StrFormat("%s/%s-qp%u-%u.%09u", dir, ports_[port]->config.name,
                      qp.qpn, wall / 1'000'000'000, wall % 1'000'000'000);
  {
    std::ofstream f(base + ".txt", std::ios::trunc);
    f << nic::QpWhyReport(qp, rnic.verdicts(), wall_base_ns_);
    if (!f.good()) {
      ROCEMU_LOG_WARNING("cannot write %s.txt", base);
      return "";
    }
  }
  capture::PcapngWriter w;
  if (absl::Status s =
          w.Open(base + ".pcapng", 65535, 0, ports_[port]->config.name);
      !s.ok()) {
    ROCEMU_LOG_WARNING("%s", s.ToString());
    return base + ".txt";
  }
  capture::WriteRecorder(qp.recorder, rnic.verdicts(), wall_base_ns_, w);
  if (absl::Status s = w.Close(); !s.ok()) {
    ROCEMU_LOG_WARNING("%s", s.ToString());
  }
  return base + ".txt";
}

std::string Daemon::WhyJson() const {
  nlohmann::ordered_json qps = nlohmann::ordered_json::array();
  for (size_t i = 0; i < rnics_.size(); ++i) {
    if (rnics_[i] == nullptr) continue;
    auto one = [&](const nic::QpStory& q) {
      const nic::QpErrorCause& c = q.cause;
      qps.push_back({{"port", ports_[i]->config.name},
                     {"qpn", q.qpn},
                     {"type", nic::QpTypeName(q.type)},
                     {"state", nic::QpStateName(q.state)},
                     {"destroyed", q.destroyed},
                     {"from", nic::QpStateName(c.from)},
                     {"reason", nic::DropReasonName(c.reason)},
                     {"packet_id", c.packet_id},
                     {"time_ns", wall_base_ns_ + c.time},
                     {"why", nic::QpWhyLine(c)}});
    };
    auto add = [&](const nic::Rnic& rnic) {
      rnic.ForEachQp([&](const nic::Qp& qp) {
        if (qp.state() == nic::QpState::kErr ||
            qp.state() == nic::QpState::kSqe) {
          one(nic::StoryOf(qp));
        }
      });
      // Failed and destroyed since (their programs exited).
      rnic.ForEachFailedQp(one);
    };
    add(rnics_[i]->rnic());
    for (const auto& s : ports_[i]->shards) add(s->rnic().rnic());
  }
  return verbs::DumpJson(nlohmann::ordered_json{{"qps", std::move(qps)}});
}

std::string Daemon::QpWhyJson(const ControlRequest& request) const {
  uint64_t qpn = 0;
  if (!request.Uint("qpn", &qpn)) {
    return JsonError("qp_why needs \"qpn\": a QP number");
  }
  const std::string port_name = request.String("port");
  for (size_t i = 0; i < rnics_.size(); ++i) {
    if (rnics_[i] == nullptr) continue;
    if (!port_name.empty() && ports_[i]->config.name != port_name) continue;
    auto find = [&](const nic::Rnic& rnic) -> std::string {
      std::optional<nic::QpStory> qp =
          FindStory(rnic, static_cast<uint32_t>(qpn));
      if (!qp.has_value()) return "";
      std::string pcapng;
      capture::PcapngWriter w;
      if (w.OpenMemory(&pcapng, 65535, ports_[i]->config.name).ok()) {
        capture::WriteRecorder(qp->recorder, rnic.verdicts(), wall_base_ns_, w);
        (void)w.Close();
      }
      return verbs::DumpJson(nlohmann::ordered_json{
          {"port", ports_[i]->config.name},
          {"qpn", qpn},
          {"state", nic::QpStateName(qp->state)},
          {"destroyed", qp->destroyed},
          {"why", nic::QpWhyLine(qp->cause)},
          {"report", nic::QpWhyReport(*qp, rnic.verdicts(), wall_base_ns_)},
          {"pcapng_base64", absl::Base64Escape(pcapng)}});
    };
    std::string r = find(rnics_[i]->rnic());
    for (const auto& s : ports_[i]->shards) {
      if (r.empty()) r = find(s->rnic().rnic());
    }
    if (!r.empty()) return r;
  }
  return JsonError(absl::StrCat("no QP ", qpn));
}

}  // namespace rocemu::emulator
