// A deterministic discrete-event network: endpoints (RNICs, switches, test
// hosts) with numbered ports, full-duplex links between ports, and one
// virtual clock. A run is a function of the topology, the endpoints and the
// seed only.
//
// Scheduling: a port's transmitter pulls frames from its endpoint. The
// harness lends `tx_queue_frames` buffers per port; it asks the endpoint to
// fill free ones when the port may have something new: right after the
// endpoint received frames, when the transmitter finishes a frame (so a busy
// sender is paced exactly by serialization), at the endpoint's
// NextEventTime() (a time not after now makes the free ports be polled once
// more), and when the test calls Kick(). With the default of one
// buffer the endpoint chooses each frame at the instant the wire is free,
// which is what a scheduler with per-priority pause and pacing needs.
#ifndef ROCEMU_TESTS_SIMNET_NETWORK_H_
#define ROCEMU_TESTS_SIMNET_NETWORK_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nic/clock.h"
#include "nic/frame_io.h"
#include "tests/simnet/frame_pool.h"
#include "tests/simnet/link.h"
#include "tests/simnet/pcap_writer.h"
#include "tests/simnet/rng.h"

namespace rocemu::simnet {

using NodeId = uint32_t;
using LinkId = uint32_t;
// Which way along a link: from the first port given to Connect() to the
// second, or back.
enum class Dir : uint8_t { kAtoB = 0, kBtoA = 1 };

struct NetworkConfig {
  uint64_t seed = 1;
  // Size of every buffer lent to Transmit() (the largest frame an endpoint
  // can send).
  uint32_t frame_capacity = 10240;
  // Frames the harness holds per port, the one being serialized included.
  uint32_t tx_queue_frames = 1;
  // Most frames handed to one Receive() call (frames arriving at the same
  // instant on the same port).
  uint32_t rx_burst = 32;
  size_t event_capacity = 1 << 14;
};

struct DeliveryInfo {
  NodeId node;
  uint16_t port;
  LinkId link;
  nic::TimeNs time;
  std::span<const uint8_t> frame;
};

class Network {
 public:
  explicit Network(const NetworkConfig& config = {});
  ~Network();
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;

  // The virtual clock; endpoints may keep a pointer to it. Only the network
  // advances it.
  const nic::ManualClock& clock() const { return clock_; }
  nic::TimeNs now() const { return clock_.Now(); }
  // Keeps an endpoint's own ManualClock equal to the network's.
  void MirrorClock(nic::ManualClock* clock);

  // The endpoint is not owned and must outlive the network.
  NodeId AddNode(nic::FrameEndpoint* endpoint, uint16_t num_ports,
                 std::string name = "");
  absl::StatusOr<LinkId> Connect(NodeId a, uint16_t port_a, NodeId b,
                                 uint16_t port_b, const LinkConfig& config);
  absl::StatusOr<LinkId> Connect(NodeId a, uint16_t port_a, NodeId b,
                                 uint16_t port_b, const LinkConfig& a_to_b,
                                 const LinkConfig& b_to_a);
  // Takes effect for frames put on the wire from now on.
  void SetLinkConfig(LinkId link, Dir dir, const LinkConfig& config);
  const LinkConfig& link_config(LinkId link, Dir dir) const;
  const LinkCounters& counters(LinkId link, Dir dir) const;
  void SetFaultHook(LinkId link, Dir dir, FaultHook hook);

  // Records what the port sends (timestamp: start of serialization, bytes
  // as sent) and receives (timestamp: arrival, bytes as delivered), like a
  // capture on the interface.
  absl::Status CapturePort(NodeId node, uint16_t port, const std::string& path);
  // Flushes and closes every capture.
  void CloseCaptures();

  // Calls fn(now) every period_ns from `first` on, for time series.
  void AddSampler(nic::TimeNs period_ns, std::function<void(nic::TimeNs)> fn,
                  nic::TimeNs first = 0);
  // Sees every delivered frame (after impairments), before the receiver.
  void SetDeliveryObserver(std::function<void(const DeliveryInfo&)> fn);

  // The endpoint may have something to send now (e.g. the test posted work
  // to it outside a callback).
  void Kick(NodeId node);

  // Processes every event up to `until` and leaves the clock there.
  void Run(nic::TimeNs until);
  // Runs until done() holds (checked after every event) or the deadline;
  // returns done().
  bool RunUntil(const std::function<bool()>& done, nic::TimeNs deadline);

  uint64_t events_processed() const { return events_processed_; }
  size_t frame_buffers_allocated() const { return pool_.allocated(); }
  size_t num_nodes() const { return nodes_.size(); }
  size_t num_links() const { return dirs_.size() / 2; }

 private:
  enum class EventKind : uint8_t { kWake, kTxDone, kDeliver, kSample };
  struct Event {
    nic::TimeNs time;
    uint64_t seq;
    uint32_t target;  // node, direction or sampler
    uint32_t buf;
    uint32_t len;
    EventKind kind;
  };
  struct EventLater {
    bool operator()(const Event& a, const Event& b) const {
      return a.time != b.time ? a.time > b.time : a.seq > b.seq;
    }
  };
  struct Node {
    nic::FrameEndpoint* endpoint;
    uint32_t first_port;
    uint16_t num_ports;
    nic::TimeNs wake_at = nic::kNever;
    std::string name;
  };
  struct Port {
    NodeId node;
    uint16_t index;
    int32_t out_dir = -1;
    int32_t in_dir = -1;
    std::unique_ptr<PcapWriter> pcap;
  };
  struct Held {
    uint32_t buf;
    uint32_t len;
  };
  struct DirState {
    LinkConfig config;
    Probability loss, reorder, duplicate, corrupt;
    LinkCounters counters;
    uint32_t src_port;  // index into ports_
    uint32_t dst_port;
    Rng rng;
    FaultHook hook;
    bool busy = false;
    nic::TimeNs free_at = 0;
    uint64_t carry = 0;      // fraction of a ns (in units of 1/rate) owed
    std::vector<Held> held;  // ring of tx_queue_frames
    uint32_t held_head = 0;
    uint32_t held_count = 0;
  };
  struct Sampler {
    nic::TimeNs period;
    std::function<void(nic::TimeNs)> fn;
  };

  void Push(nic::TimeNs t, EventKind kind, uint32_t target, uint32_t buf = 0,
            uint32_t len = 0);
  void Step();
  void Deliver(const Event& first);
  void Poll(NodeId node);
  void Pull(uint32_t dir);
  void StartTx(uint32_t dir);
  void OnTxDone(uint32_t dir);
  void ScheduleWake(NodeId node);
  void ApplyConfig(DirState& d, const LinkConfig& config);
  void SetTime(nic::TimeNs t);

  NetworkConfig config_;
  nic::ManualClock clock_;
  FramePool pool_;
  std::vector<Event> heap_;
  uint64_t next_seq_ = 0;
  uint64_t events_processed_ = 0;
  std::vector<Node> nodes_;
  std::vector<Port> ports_;
  std::vector<DirState> dirs_;
  std::vector<Sampler> samplers_;
  std::vector<nic::ManualClock*> mirrors_;
  std::function<void(const DeliveryInfo&)> observer_;
  std::vector<nic::TxFrame> tx_scratch_;
  std::vector<uint32_t> tx_scratch_ids_;
  std::vector<nic::RxFrame> rx_scratch_;
  std::vector<uint32_t> rx_scratch_ids_;
};

}  // namespace rocemu::simnet

#endif  // ROCEMU_TESTS_SIMNET_NETWORK_H_
