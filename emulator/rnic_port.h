// One RNIC (nic::Rnic) per daemon port, configured from the port's settings:
// its MAC, GIDs from the port's addresses (plus the MAC's IPv6 link-local
// GID), the P_Key table, the active MTU the link can carry and the traffic
// classes / DCQCN / PFC parameters. It also keeps the QPNs created through
// the daemon so that per-QP counters can be reported and every QP flushed
// on shutdown, and resolves a destination GID's next-hop MAC through the
// daemon's neighbour cache.
#ifndef ROCEMU_EMULATOR_RNIC_PORT_H_
#define ROCEMU_EMULATOR_RNIC_PORT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "config/config.h"
#include "emulator/net_types.h"
#include "nic/rnic.h"

namespace rocemu::emulator {

// RnicConfig for a port (exposed for tests).
absl::StatusOr<nic::RnicConfig> MakeRnicConfig(const config::Config& config,
                                               unsigned port,
                                               const MacAddr& mac);

class RnicPort {
 public:
  // The MAC of an IP on the port's link, or nullopt while unresolved (a
  // solicitation is then on its way).
  using Resolver = std::function<std::optional<MacAddr>(const IpAddr&)>;

  static absl::StatusOr<std::unique_ptr<RnicPort>> Create(
      const config::Config& config, unsigned port, const MacAddr& mac,
      Resolver resolver);

  nic::Rnic& rnic() { return *rnic_; }
  const nic::Rnic& rnic() const { return *rnic_; }
  std::optional<MacAddr> Resolve(const IpAddr& ip) const {
    return resolver_(ip);
  }

  // QPs created through the daemon (reported and flushed).
  void TrackQp(uint32_t qpn) { qpns_.push_back(qpn); }
  void UntrackQp(uint32_t qpn);
  const std::vector<uint32_t>& qpns() const { return qpns_; }

  // Moves every QP to ERR: outstanding work requests complete with
  // WR_FLUSH_ERR. Returns the number of QPs moved.
  size_t FlushAll();
  // "rnic":{device counters...,"qps":{"17":{"type":..,"state":..,...}}}
  void AppendCountersJson(std::string* out) const;
  // Prometheus lines for the device counters and per-QP counters.
  void AppendPrometheus(const std::string& port_name, std::string* out) const;

 private:
  RnicPort(const nic::RnicConfig& config, Resolver resolver)
      : rnic_(std::make_unique<nic::Rnic>(config)),
        resolver_(std::move(resolver)) {}

  std::unique_ptr<nic::Rnic> rnic_;
  Resolver resolver_;
  std::vector<uint32_t> qpns_;
};

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_RNIC_PORT_H_
