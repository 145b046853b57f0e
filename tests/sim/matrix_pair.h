// Two RNIC devices with a connected RC queue pair (or several) between them,
// wired through one simulated link (tests/simnet) under virtual time. Used by
// the reliability matrix and the simulator benchmarks.
#ifndef ROCEMU_TESTS_SIM_MATRIX_PAIR_H_
#define ROCEMU_TESTS_SIM_MATRIX_PAIR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nic/handles.h"
#include "nic/qp_attr.h"
#include "nic/rnic.h"
#include "tests/simnet/link.h"
#include "tests/simnet/network.h"
#include "tests/simnet/pcap_writer.h"

namespace rocemu::sim {

struct PairOptions {
  nic::PathMtu mtu = nic::PathMtu::kMtu4096;
  simnet::LinkConfig link;  // both directions
  uint64_t seed = 1;
  // QP attributes as a deployment on a short, fast path sets them: 4.096 us
  // * 2^10 = 4.2 ms ACK timeout (many RTTs), 7 retries, infinite RNR retry.
  uint8_t timeout = 10;
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;
  uint8_t min_rnr_timer = 1;   // 10 us
  uint8_t max_rd_atomic = 16;  // ConnectX-5 and later
  uint32_t max_send_wr = 256;
  uint32_t max_recv_wr = 256;
  uint32_t cqe = 1024;
  size_t buf_size = 1 << 20;  // registered bytes per side
  // More connected RC QPs between the same two sides (qpns[1..]), sharing
  // the CQ and the buffer: the multi-QP engine benchmarks.
  uint32_t extra_qps = 0;
  // nic::RnicConfig::flight_recorder_events of both sides (0: none; the
  // engine benchmarks measure the recorder's cost with and without).
  uint32_t flight_recorder_events = 64;
  // Pcap of A's port (A's frames as sent, B's as delivered to A).
  std::string capture_path;
  // Pcap of both directions as they go onto the link, before any
  // impairment: a loss shows as the retransmission that follows it, not as
  // a hole.
  std::string link_tap_path;
};

// One side: device, PD, CQ (send and receive), QP and a registered buffer.
struct PairSide {
  explicit PairSide(const nic::RnicConfig& config) : nic(config) {}
  nic::Rnic nic;
  nic::PdHandle pd = 0;
  nic::CqHandle cq = 0;
  std::vector<uint32_t> qpns;  // QP i connects to the peer's qpns[i]
  uint32_t qpn() const { return qpns.front(); }  // the first (or only) QP
  std::vector<uint8_t> buf;
  uint32_t key = 0;
  simnet::NodeId node = 0;

  uint64_t Va(size_t offset) const {
    return reinterpret_cast<uint64_t>(buf.data() + offset);
  }
};

class MatrixPair {
 public:
  static absl::StatusOr<std::unique_ptr<MatrixPair>> Create(
      const PairOptions& options);
  ~MatrixPair();

  PairSide& a() { return *a_; }
  PairSide& b() { return *b_; }
  simnet::Network& net() { return *net_; }
  simnet::LinkId link() const { return link_; }
  const PairOptions& options() const { return options_; }
  // Flushes and closes the captures.
  void CloseCaptures();

 private:
  explicit MatrixPair(const PairOptions& options);
  absl::Status Init();

  PairOptions options_;
  std::unique_ptr<PairSide> a_;
  std::unique_ptr<PairSide> b_;
  std::unique_ptr<simnet::Network> net_;
  std::unique_ptr<simnet::PcapWriter> tap_;
  simnet::LinkId link_ = 0;
};

}  // namespace rocemu::sim

#endif  // ROCEMU_TESTS_SIM_MATRIX_PAIR_H_
