// The control socket's commands: which view answers a request, and the
// few commands that act on the daemon (capture on/off, neighbour
// resolution, test hooks). The views themselves are in daemon_views.cc.
#include <arpa/inet.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/str_cat.h"
#include "emulator/daemon.h"
#include "emulator/port/memif_guard.h"
#include "verbs/server/json_writer.h"

namespace rocemu::emulator {

std::string Daemon::HandleControl(std::string_view request) {
  // The shards' RNICs and sessions are read (and the test hooks may act
  // on the first one's) while the shards wait.
  PausedShards paused(*this);
  const ControlRequest req(request);
  std::string cmd = req.String("cmd");
  if (cmd.empty()) {
    // Bare words are accepted for humans at a socat prompt.
    cmd = std::string(request);
    while (!cmd.empty() && cmd.back() == ' ') cmd.pop_back();
  }
  if (cmd == "counters") return CountersJson();
  if (cmd == "devices") return DevicesJson();
  if (cmd == "ports") return PortsJson();
  if (cmd == "qps") return QpsJson();
  if (cmd == "cm") return CmJson();
  // MRs belong to sessions: one view serves both listings.
  if (cmd == "clients" || cmd == "mrs") return SessionsJson();
  if (cmd == "pfc") return PfcJson();
  if (cmd == "dcqcn") return DcqcnJson();
  if (cmd == "why") return WhyJson();
  if (cmd == "qp_why") return QpWhyJson(req);
  if (hooks_ != nullptr && TestHooks::Handles(cmd)) {
    return hooks_->Handle(cmd, req);
  }
  if (hooks_ != nullptr && cmd == "memif_fault") {
    // The next memif burst faults as a departing peer's teardown makes it
    // (emulator/port/memif_guard.h): the containment, on demand.
    MemifGuard::InjectFault();
    return verbs::DumpJson(nlohmann::ordered_json{{"ok", true}});
  }
  if (cmd == "ping")
    return verbs::DumpJson(nlohmann::ordered_json{{"ok", true}});
  if (cmd == "resolve") {
    // Drives the resolver by hand: the first call for an unknown address
    // sends an ARP request / neighbour solicitation, later calls report.
    std::string port_name = req.String("port");
    std::string ip_text = req.String("ip");
    for (unsigned i = 0; i < ports_.size(); ++i) {
      if (ports_[i]->config.name != port_name) continue;
      IpAddr ip{};
      in6_addr a6;
      in_addr a4;
      if (inet_pton(AF_INET, ip_text.c_str(), &a4) == 1) {
        ip = Ipv4Mapped(reinterpret_cast<const uint8_t*>(&a4));
      } else if (inet_pton(AF_INET6, ip_text.c_str(), &a6) == 1) {
        std::memcpy(ip.data(), &a6, 16);
      } else {
        return JsonError("resolve needs \"ip\": an IPv4 or IPv6 address");
      }
      std::optional<MacAddr> mac = ResolveNeighbour(i, ip);
      return verbs::DumpJson(nlohmann::ordered_json{
          {"ok", true},
          {"mac", mac.has_value()
                      ? nlohmann::ordered_json(config::FormatMac(*mac))
                      : nlohmann::ordered_json(nullptr)}});
    }
    return JsonError(absl::StrCat("no port '", port_name, "'"));
  }
  if (cmd == "capture") {
    bool enable = false;
    if (!req.Bool("enable", &enable)) {
      return JsonError("capture needs \"enable\": true|false");
    }
    absl::Status s = SetCapture(enable);
    if (!s.ok()) {
      return JsonError(s.ToString());
    }
    return verbs::DumpJson(
        nlohmann::ordered_json{{"ok", true}, {"capture", capture_on_}});
  }
  return JsonError(absl::StrCat(
      "unknown command '", cmd,
      "' (counters, devices, ports, qps, clients, mrs, pfc, dcqcn, why, "
      "qp_why, capture, resolve, ping",
      hooks_ != nullptr ? ", test hooks" : "", ")"));
}

}  // namespace rocemu::emulator
