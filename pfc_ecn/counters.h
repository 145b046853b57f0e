// Congestion counters under the names operators read from mlx5: ethtool -S
// (rx_prioN_pause ...) for the port, RDMA hw_counters (np_cnp_sent ...) for
// the notification and reaction points. ForEach() enumerates (name, value)
// pairs for export without allocating.
#ifndef ROCEMU_PFC_ECN_COUNTERS_H_
#define ROCEMU_PFC_ECN_COUNTERS_H_

#include <array>
#include <cstdint>
#include <string_view>

namespace rocemu::pfc_ecn {

inline constexpr int kNumPriorities = 8;

struct PortCongestionCounters {
  // PFC frames received / sent with the priority's enable bit set (XOFF and
  // XON alike: both are MAC Control PFC frames for that priority).
  std::array<uint64_t, kNumPriorities> rx_prio_pause{};
  std::array<uint64_t, kNumPriorities> tx_prio_pause{};
  // Time the priority was held paused by the peer, in microseconds.
  std::array<uint64_t, kNumPriorities> rx_prio_pause_duration{};
  // 802.3x PAUSE (all priorities), mlx5's "global" names.
  uint64_t rx_global_pause = 0;
  uint64_t tx_global_pause = 0;
  uint64_t rx_global_pause_duration = 0;

  PortCongestionCounters& operator+=(const PortCongestionCounters& o);

  // Calls f(std::string_view name, uint64_t value) for every counter.
  template <typename F>
  void ForEach(F&& f) const {
    for (int p = 0; p < kNumPriorities; ++p) {
      f(kRxPrioPause[p], rx_prio_pause[p]);
      f(kRxPrioPauseDuration[p], rx_prio_pause_duration[p]);
      f(kTxPrioPause[p], tx_prio_pause[p]);
    }
    f("rx_global_pause", rx_global_pause);
    f("rx_global_pause_duration", rx_global_pause_duration);
    f("tx_global_pause", tx_global_pause);
  }

 private:
  static constexpr std::array<std::string_view, kNumPriorities> kRxPrioPause{
      "rx_prio0_pause", "rx_prio1_pause", "rx_prio2_pause", "rx_prio3_pause",
      "rx_prio4_pause", "rx_prio5_pause", "rx_prio6_pause", "rx_prio7_pause"};
  static constexpr std::array<std::string_view, kNumPriorities> kTxPrioPause{
      "tx_prio0_pause", "tx_prio1_pause", "tx_prio2_pause", "tx_prio3_pause",
      "tx_prio4_pause", "tx_prio5_pause", "tx_prio6_pause", "tx_prio7_pause"};
  static constexpr std::array<std::string_view, kNumPriorities>
      kRxPrioPauseDuration{
          "rx_prio0_pause_duration", "rx_prio1_pause_duration",
          "rx_prio2_pause_duration", "rx_prio3_pause_duration",
          "rx_prio4_pause_duration", "rx_prio5_pause_duration",
          "rx_prio6_pause_duration", "rx_prio7_pause_duration"};
};

// Per flow (summed per port/device for hw_counters).
struct FlowCongestionCounters {
  uint64_t np_ecn_marked_roce_packets = 0;
  uint64_t np_cnp_sent = 0;
  uint64_t rp_cnp_handled = 0;
  uint64_t rp_cnp_ignored = 0;

  FlowCongestionCounters& operator+=(const FlowCongestionCounters& o);

  template <typename F>
  void ForEach(F&& f) const {
    f("np_ecn_marked_roce_packets", np_ecn_marked_roce_packets);
    f("np_cnp_sent", np_cnp_sent);
    f("rp_cnp_handled", rp_cnp_handled);
    f("rp_cnp_ignored", rp_cnp_ignored);
  }
};

}  // namespace rocemu::pfc_ecn

#endif  // ROCEMU_PFC_ECN_COUNTERS_H_
