// One RNIC (nic::Rnic) per daemon port, configured from the port's settings:
// its MAC, GIDs from the port's addresses (plus the MAC's IPv6 link-local
// GID), the P_Key table, the active MTU the link can carry and the traffic
// classes / DCQCN / PFC parameters. It also keeps the QPNs created through
// the daemon so that per-QP counters can be reported and every QP flushed
// on shutdown, and resolves a destination GID's next-hop MAC through the
// daemon's neighbour cache.
#ifndef ROCEMU_EMULATOR_PORT_RNIC_PORT_H_
#define ROCEMU_EMULATOR_PORT_RNIC_PORT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "config/config.h"
#include "emulator/net/net_types.h"
#include "nic/qp.h"
#include "nic/rnic.h"

namespace rocemu::emulator {

// Per-QP counters under the rxe/mlx5 names the nic uses for them.
template <typename F>
void ForEachQpCounter(const nic::QpCounters& c, F f) {
  f("sent_pkts", c.sent_pkts);
  f("rcvd_pkts", c.rcvd_pkts);
  f("sent_bytes", c.sent_bytes);
  f("rcvd_bytes", c.rcvd_bytes);
  f("duplicate_request", c.duplicate_request);
  f("out_of_sequence", c.out_of_sequence);
  f("rcvd_rnr_err", c.rcvd_rnr_err);
  f("send_rnr_err", c.send_rnr_err);
  f("rcvd_seq_err", c.rcvd_seq_err);
  f("retry_exceeded_err", c.retry_exceeded_err);
  f("retry_rnr_exceeded_err", c.retry_rnr_exceeded_err);
  f("completer_retry_err", c.completer_retry_err);
  f("local_ack_timeout_err", c.local_ack_timeout_err);
  f("implied_nak_seq_err", c.implied_nak_seq_err);
  f("ghost_ack", c.ghost_ack);
  f("rx_dropped", c.rx_dropped);
  f("out_of_buffer", c.out_of_buffer);
  f("rnr_naks_sent", c.rnr_naks_sent);
  f("naks_sent", c.naks_sent);
  f("acks_sent", c.acks_sent);
  f("ack_deferred", c.ack_deferred);
  f("cnp_received", c.cnp_received);
}

// RnicConfig for a port (exposed for tests).
absl::StatusOr<nic::RnicConfig> MakeRnicConfig(const config::Config& config,
                                               unsigned port,
                                               const MacAddr& mac);

class RnicPort {
 public:
  // The MAC of an IP on the port's link, or nullopt while unresolved (a
  // solicitation is then on its way).
  using Resolver = std::function<std::optional<MacAddr>(const IpAddr&)>;

  // `shard` of `shards`: nic::RnicConfig::shard.
  static absl::StatusOr<std::unique_ptr<RnicPort>> Create(
      const config::Config& config, unsigned port, const MacAddr& mac,
      Resolver resolver, uint32_t shard = 0, uint32_t shards = 1);

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
  // Prometheus lines for the device counters and per-QP counters.
  void AppendPrometheus(const std::string& port_name, std::string* out) const;

  // --- control-plane views (emulator/control/rnic_state_json.cc), one JSON
  // value each; `now` for the time-based PFC counters. ---
  // The pid of the application owning a QP, if one does.
  using QpOwnerFn = std::function<std::optional<int64_t>(uint32_t qpn)>;
  // The counters view's "rnic": the device counters, then
  // "qps":{"17":{"type":..,"state":..,per-QP counters...}}.
  nlohmann::ordered_json CountersJson() const;
  // ibv_devinfo's device part: GUIDs, firmware, limits.
  nlohmann::ordered_json DeviceJson() const;
  // ibv_devinfo's port part: state, MTUs, link layer, GID and P_Key tables.
  nlohmann::ordered_json PortJson() const;
  // `rdma resource show qp` plus per-QP counters and rate-limiter state:
  // a JSON list, every QP of the RNIC (the daemon's and applications').
  nlohmann::ordered_json QpsJson(const QpOwnerFn& owner) const;
  // [{"gid":..., "qpns":[...]}]: the UD QPs attached to each multicast
  // group.
  nlohmann::ordered_json MulticastJson() const;
  // `rdma resource show cm_id`: every id of the Communication Manager
  // (listeners, connections, SIDR exchanges) with its state; `owner` gives
  // the pid behind a session client id.
  using ClientPidFn = std::function<std::optional<int64_t>(uint32_t client)>;
  nlohmann::ordered_json CmJson(const ClientPidFn& owner) const;
  // PFC: enabled/paused priorities and the mlx5 port counters
  // (rx_prioN_pause, rx_prioN_pause_duration, tx_prioN_pause).
  nlohmann::ordered_json PfcJson(nic::TimeNs now) const;
  // DCQCN: parameters, NP/RP counters, and each QP's reaction point.
  nlohmann::ordered_json DcqcnJson() const;
  // Prometheus lines for the PFC and per-QP DCQCN state.
  void AppendCongestionPrometheus(const std::string& port_name, nic::TimeNs now,
                                  std::string* out) const;

 private:
  RnicPort(const nic::RnicConfig& config, Resolver resolver)
      : rnic_(std::make_unique<nic::Rnic>(config)),
        resolver_(std::move(resolver)) {}

  std::unique_ptr<nic::Rnic> rnic_;
  Resolver resolver_;
  std::vector<uint32_t> qpns_;
};

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_PORT_RNIC_PORT_H_
