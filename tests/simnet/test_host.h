// A simple endpoint for tests and simulations: sends numbered IPv4/UDP
// frames in streams (a traffic generator) or raw frames at given times, and
// records what it receives (a sink). Not an RNIC: no reaction to loss.
#ifndef ROCEMU_TESTS_SIMNET_TEST_HOST_H_
#define ROCEMU_TESTS_SIMNET_TEST_HOST_H_

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "nic/clock.h"
#include "nic/frame_io.h"
#include "tests/simnet/ether.h"

namespace rocemu::simnet {

inline constexpr uint16_t kTestUdpPort = 9000;
// The link rate most tests use, in bits/s (one definition for all of the
// simnet_test sources, which a unity build compiles as one).
inline constexpr uint64_t k100G = 100'000'000'000;
// Ethernet + IPv4 + UDP + flow id (4) + sequence number (8).
inline constexpr uint32_t kTestFrameMinLen = 14 + 20 + 8 + 12;

struct StreamSpec {
  uint16_t port = 0;
  uint32_t flow = 0;
  uint64_t count = 0;
  uint32_t frame_len = 1000;  // whole frame without FCS, >= kTestFrameMinLen
  nic::TimeNs start = 0;
  nic::TimeNs interval_ns = 0;  // 0: as fast as the port takes them
  MacAddr src_mac{0x02, 0, 0, 0, 0, 1};
  MacAddr dst_mac{0x02, 0, 0, 0, 0, 2};
  uint8_t dscp = 26;
  uint8_t ecn = kEcnEct0;
  int vlan_pcp = -1;  // >= 0: 802.1Q tag (VID 0) with this PCP
};

struct Arrival {
  nic::TimeNs time = 0;
  uint16_t port = 0;
  uint32_t len = 0;
  bool test_frame = false;  // carries flow and seq
  uint32_t flow = 0;
  uint64_t seq = 0;
  uint8_t ecn = 0;
  bool mac_control = false;
};

class TestHost : public nic::FrameEndpoint {
 public:
  explicit TestHost(uint16_t num_ports = 1)
      : num_ports_(num_ports), paused_until_(num_ports) {}

  // Returns the stream index.
  size_t AddStream(const StreamSpec& spec);
  // Sends `frame` on `port` as soon as possible at or after `at`.
  void SendRaw(uint16_t port, std::span<const uint8_t> frame, nic::TimeNs at);
  // Builds the frame the stream would send for `seq` (for checks).
  static size_t BuildTestFrame(const StreamSpec& spec, uint64_t seq,
                               std::span<uint8_t> out);

  void set_keep_frames(bool keep) { keep_frames_ = keep; }
  // Obey received PAUSE/PFC: a stream stops while its priority (the VLAN PCP
  // if tagged, else DSCP / 8) is paused on its port.
  void set_obey_pause(bool obey, uint64_t port_rate_bps) {
    obey_pause_ = obey;
    port_rate_bps_ = port_rate_bps;
  }
  static uint8_t StreamPriority(const StreamSpec& spec) {
    return spec.vlan_pcp >= 0 ? static_cast<uint8_t>(spec.vlan_pcp)
                              : static_cast<uint8_t>(spec.dscp >> 3);
  }
  const std::vector<Arrival>& arrivals() const { return arrivals_; }
  // Bytes of every received frame, when keep_frames is set.
  const std::vector<std::vector<uint8_t>>& frames() const { return frames_; }
  uint64_t sent(size_t stream) const { return streams_[stream].sent; }
  bool done_sending() const;
  uint64_t received_bytes(uint32_t flow) const;
  uint64_t received_frames() const { return arrivals_.size(); }

  void Receive(uint16_t port, std::span<const nic::RxFrame> frames,
               nic::TimeNs now) override;
  size_t Transmit(uint16_t port, std::span<nic::TxFrame> frames,
                  nic::TimeNs now) override;
  nic::TimeNs NextEventTime() const override;

 private:
  struct Stream {
    StreamSpec spec;
    uint64_t sent = 0;
    nic::TimeNs next = 0;
  };
  struct Raw {
    uint16_t port;
    nic::TimeNs at;
    std::vector<uint8_t> bytes;
  };

  bool Paused(const StreamSpec& spec, nic::TimeNs now) const;

  uint16_t num_ports_;
  bool obey_pause_ = false;
  uint64_t port_rate_bps_ = 0;
  // Per port and priority: paused until (a PAUSE sets all eight).
  std::vector<std::array<nic::TimeNs, 8>> paused_until_;
  std::vector<Stream> streams_;
  std::vector<Raw> raw_;  // in order of `at`
  size_t rr_ = 0;
  bool keep_frames_ = false;
  std::vector<Arrival> arrivals_;
  std::vector<std::vector<uint8_t>> frames_;
  absl::flat_hash_map<uint32_t, uint64_t> flow_bytes_;
};

}  // namespace rocemu::simnet

#endif  // ROCEMU_TESTS_SIMNET_TEST_HOST_H_
