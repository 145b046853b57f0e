// rocemud's core: owns the EAL, the configured ports and their net stacks,
// captures, fault injectors and the control plane, and runs the single-lcore
// poll loop that carries frames between the ports and the RNIC model
// (nic::FrameEndpoint). Received frames reach the endpoint as views into
// mbuf data (no copy); the endpoint fills mbufs lent as TxFrames.
#ifndef ROCEMU_EMULATOR_DAEMON_H_
#define ROCEMU_EMULATOR_DAEMON_H_

#include <rte_mbuf.h>

#include <atomic>
#include <csignal>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "config/config.h"
#include "emulator/capture/capture_writer.h"
#include "emulator/capture/fault_injector.h"
#include "emulator/capture/frame_notes.h"
#include "emulator/control/control_server.h"
#include "emulator/control/test_hooks.h"
#include "emulator/control_cadence.h"
#include "emulator/idle_wait.h"
#include "emulator/net/cm_services.h"
#include "emulator/net/neighbour_cache.h"
#include "emulator/net/net_stack.h"
#include "emulator/port/dpdk_port.h"
#include "emulator/port/ingress_congestion.h"
#include "emulator/port/netdev_port.h"
#include "emulator/port/rnic_port.h"
#include "emulator/port/tx_stash.h"
#include "emulator/shard.h"
#include "emulator/tsc_clock.h"
#include "nic/frame_io.h"
#include "verbs/server/session_server.h"

namespace rocemu::emulator {

// Signals only set these; the loop acts on them.
struct DaemonSignals {
  volatile std::sig_atomic_t stop = 0;
  volatile std::sig_atomic_t reopen = 0;
};

struct PortCounters {
  uint64_t rx_packets = 0;
  uint64_t rx_bytes = 0;
  uint64_t tx_packets = 0;
  uint64_t tx_bytes = 0;
  uint64_t tx_dropped = 0;          // no room even in the TX backlog
  uint64_t tx_ring_full = 0;        // bursts the PMD took only partly
  uint64_t tx_backpressure = 0;     // passes the RNIC waited for TX room
  uint64_t rx_segmented = 0;        // chained mbufs: dropped
  uint64_t rx_nic_no_endpoint = 0;  // RoCE/PFC frames while no RNIC is attached
  uint64_t tx_nombuf = 0;           // no mbuf for a reply or a TX burst
  uint64_t loopback_packets = 0;    // RNIC frames to our own MAC (and copies
                                    // of its multicast frames), looped back
  uint64_t rx_shard_ring_full = 0;  // eal.lcores > 1: a shard's RX ring was
                                    // full (dropped, counted here)
  // From rte_eth_stats, refreshed once a second.
  uint64_t rx_missed = 0;
  uint64_t rx_errors = 0;
  uint64_t tx_errors = 0;
  uint64_t rx_nombuf = 0;
  // net_memif bursts caught by the PMD's teardown of a departing peer and
  // contained (emulator/port/memif_guard.h); refreshed once a second.
  uint64_t memif_faults = 0;
};

class Daemon {
 public:
  // The unit of back-pressure (a burst waiting for the wire stops the
  // RNIC) and of a shard's hand-over.
  static constexpr uint16_t kBurst = 32;
  // Frames taken from the PMD per pass. The RNIC sees them in one Receive,
  // so a responder acknowledges each QP's share of them with one ACK: under
  // load on 16 QPs, 64 frames per burst means one ACK per four WRITEs
  // where 32 meant one per two, and the requester parses half as many.
  static constexpr uint16_t kRxBurst = 64;
  // The RNIC's room per pass. A pass costs a few hundred nanoseconds
  // beyond its frames (PMD polls, rings, timers), which 128 frames share.
  static constexpr uint16_t kTxBurst = 128;
  // Frames one pass can queue for TX: the net stack's replies to a
  // received burst, the RNIC's frames and the shards'.
  static constexpr uint16_t kTxBatch = kRxBurst + kTxBurst + 2 * kBurst;

  explicit Daemon(config::Config config);
  ~Daemon();

  // EAL, ports, captures and control socket, all or nothing.
  absl::Status Init();
  // Until signals->stop; then stops TX, closes captures and ports.
  void Run(DaemonSignals* signals);
  // One pass of Run's loop without its idling: the applications' rings,
  // the ports, timers, control sockets and periodic work (and SIGHUP's
  // reopen, with `signals`). Returns whether any frame or work request
  // moved. The embedded mode (embedded.h) runs passes from whichever of
  // the application's threads holds the RNIC; only one at a time.
  bool Pass(DaemonSignals* signals = nullptr);
  // The same at `now` (this clock's): a caller that just read the clock
  // passes it on, as reading the TSC is the largest cost of an idle pass
  // under a hypervisor.
  bool Pass(nic::TimeNs now, DaemonSignals* signals);
  // Stops TX, closes captures and ports (Run does it when stopped), and
  // cleans the EAL up.
  void Shutdown();
  // In an application's process (embedded.h), Shutdown runs as the process
  // exits: it still stops TX and flushes every QP, but leaves the DPDK
  // ports and the EAL to the process's end. Closing a memif port there
  // races the EAL's threads over the peer's disconnection (DPDK logs
  // "EAL: Error: Invalid memory" into the program's output), and lcores
  // the application's threads registered would outlive the EAL's heap.
  void LeaveDpdkToProcessExit() { leave_dpdk_to_exit_ = true; }

  // The embedded mode's progress thread idles with these (embedded.h).
  // Run's preparation: the fds and RX interrupts Sleep waits on.
  void SetUpIdleWait();
  // Run's idling after a pass at `now` that moved nothing: a yield, or,
  // after idle_spin_us since *last_busy, a sleep on doorbells, RX
  // interrupts and timers (which resets *last_busy).
  void Idle(nic::TimeNs now, nic::TimeNs* last_busy);

  // Plugs a frame endpoint into one port (it is called with the port's
  // index). Until then RoCE and PFC frames are counted in
  // rx_nic_no_endpoint.
  void AttachEndpoint(unsigned port, nic::FrameEndpoint* endpoint) {
    ports_.at(port)->endpoint = endpoint;
    ports_.at(port)->verdicts =
        endpoint != nullptr ? endpoint->verdict_log() : nullptr;
  }
  // After Init: one RNIC per port, configured from the port's settings and
  // resolving next hops through the port's neighbour cache; with
  // control.test_hooks also the daemon-side verbs on the control socket.
  absl::Status AttachRnics();
  RnicPort* rnic(unsigned port) {
    return port < rnics_.size() ? rnics_[port].get() : nullptr;
  }
  // The verbs session server applications attach to on `port` (created by
  // AttachRnics for every port config::Config::VerbsSocketPath names), or
  // nullptr.
  verbs::SessionServer* session(unsigned port) {
    return port < sessions_.size() ? sessions_[port].get() : nullptr;
  }
  // After Init: the MAC the port answers for (the RNIC must source frames
  // from it) and its validated settings (addresses -> GIDs, P_Keys, TCs).
  size_t port_count() const { return ports_.size(); }
  const MacAddr& PortMac(unsigned port) const {
    return ports_.at(port)->stack->mac();
  }
  const config::PortConfig& PortSettings(unsigned port) const {
    return ports_.at(port)->config;
  }
  const config::Config& settings() const { return config_; }
  // The RNIC resolves destination MACs through this (the solicitation, if
  // one is due, is queued on the port).
  std::optional<MacAddr> ResolveNeighbour(unsigned port, const IpAddr& ip);

  // Control-plane views (also served on the control socket; rocemu-ctl
  // renders them).
  std::string CountersJson() const;
  std::string DevicesJson() const;
  std::string PortsJson() const;
  std::string QpsJson() const;
  std::string CmJson() const;
  // Application sessions: clients and their PDs, MRs, CQs, QPs per port.
  std::string SessionsJson() const;
  std::string PfcJson() const;
  std::string DcqcnJson() const;
  std::string PrometheusText() const;
  // Every QP in ERR or SQE with one line of cause (rocemu-ctl why), and one
  // QP's flight recorder as text and base64 pcapng (rocemu-ctl qp N --why;
  // request fields "qpn", optional "port"). emulator/daemon_why.cc.
  std::string WhyJson() const;
  // The port's per-reason counters: the daemon's and its RNICs'.
  nic::DropReasonCounters PortReasons(size_t port) const;
  std::string QpWhyJson(const ControlRequest& request) const;
  std::string HandleControl(std::string_view request);
  absl::Status SetCapture(bool enabled);
  const nic::Clock& clock() const { return *clock_; }

 private:
  struct Held {
    rte_mbuf* m;
    nic::TimeNs release;
  };
  // Where a fault injector's drops are captured (and counted).
  struct FaultSite {
    CaptureWriter* capture;  // nullptr: not captured
    capture::Direction dir;
  };
  // Frames a fault injector holds back in one direction.
  struct FaultState {
    static constexpr size_t kCapacity = 1024;
    Held ring[kCapacity];
    size_t head = 0, count = 0;
    rte_mbuf* reorder = nullptr;  // released after the next frame
    nic::TimeNs reorder_deadline = 0;
  };
  struct Port {
    config::PortConfig config;
    std::optional<DpdkPort> dev;
    NeighbourCache neighbours;
    std::unique_ptr<NetStack> stack;
    std::unique_ptr<FaultInjector> rx_faults, tx_faults;
    FaultState rx_held, tx_held;
    CaptureWriter rx_capture, tx_capture;
    // Where each direction's frames are written: rx_capture for both when
    // capture.rx_path and tx_path name one file.
    CaptureWriter* tx_out = &tx_capture;
    // The port's packet ids: the first RNIC's VerdictLog (its verdicts go
    // into the capture), or the port's own when no RNIC is attached.
    nic::VerdictLog* verdicts = nullptr;
    nic::VerdictLog own_ids{1, 1};
    // Frames the daemon dropped, held or altered, by reason (the RNIC's
    // own reasons are its reason_counters()).
    nic::DropReasonCounters reasons;
    std::string note_scratch;  // a capture comment being built
    PortCounters counters;
    // ports[].congestion_point: RoCE frames wait here before the RNIC.
    std::unique_ptr<IngressCongestion> ingress;
    rte_mbuf* spare = nullptr;   // reply buffer for the net stack
    TxStash<kTxBurst> tx_stash;  // the RNIC's room for its next frames
    rte_mbuf* tx_batch[kTxBatch];
    uint16_t tx_count = 0;
    // Frames ready for the wire (fault injection, capture and loopback
    // done) that the PMD has not taken yet; they go first on the next
    // pass. While a burst or more waits here the RNIC is not asked for
    // frames: it keeps its work queued, so nothing it builds is dropped
    // for lack of TX room.
    // Room for a full pass, doubled by fault injection, behind a burst.
    static constexpr uint16_t kBacklog = kBurst + 2 * kTxBatch;
    rte_mbuf* tx_backlog[kBacklog];
    uint16_t tx_backlog_count = 0;
    // Of those, the frames of priorities the peer paused (PFC/PAUSE), kept
    // at the end of the backlog in order until the pause ends: a ConnectX
    // stops a paused priority's TX queue, the others keep sending.
    uint16_t tx_paused_count = 0;
    nic::FrameEndpoint* endpoint = nullptr;
    nic::TimeNs next_event = 0;  // endpoint's NextEventTime
    // The link as the RNICs know it (UpdateLink). The port is ACTIVE until
    // its link has been up once: a memif server's link is down until its
    // peer starts, and programs refuse a port that is not ACTIVE
    // (perftest), as they would a NIC with no cable.
    bool link_seen_up = false;
    bool link_up = true;
    // A netdev port's interface (daemon_netdev.cc), or null.
    std::unique_ptr<NetdevPort> netdev;
    // The interface's MTU is below what a RoCEv2 frame needs: down.
    bool mtu_too_small = false;
    // The RNIC's multicast groups as last reported (ReportGroups), the
    // last change, and when it is reported again (0: not).
    uint64_t groups_generation = 0;
    std::vector<IpAddr> groups, groups_joined, groups_left;
    nic::TimeNs groups_repeat_at = 0;
    nic::TimeNs memif_rejoin_at = 0;  // RejoinMemifServer's next try
    uint16_t index = 0;               // in ports_: the endpoint's port number
    // eal.lcores > 1: shards 1 .. lcores-1 (shards[k - 1] is shard k; the
    // endpoint is shard 0), the port's CM listeners, and which shard each
    // application process was placed on.
    std::vector<std::unique_ptr<Shard>> shards;
    std::unique_ptr<PortCmServices> cm_services;
    absl::flat_hash_map<pid_t, uint32_t> pid_shard;
    // Addresses the shards' lcores asked for and found unresolved: the
    // port's lcore solicits them (ResolveFromShard).
    std::mutex resolve_mu;
    std::vector<IpAddr> resolve_requests;
  };
  // Pauses every shard of every port for its lifetime (no-op with one
  // lcore): their RNICs and sessions may then be read from this lcore.
  class PausedShards {
   public:
    explicit PausedShards(const Daemon& d);
    ~PausedShards();
    PausedShards(const PausedShards&) = delete;
    PausedShards& operator=(const PausedShards&) = delete;

   private:
    const Daemon& d_;
  };

  // --- netdev ports (daemon_netdev.cc) ---
  // Before the EAL: claims and reads each netdev port's interface and
  // fills in its devargs, MTU and addresses.
  absl::Status OpenNetdevs();
  // What DpdkPort::Open needs beyond the config for port `index`.
  DpdkPort::Options PortOptions(unsigned index) const;
  // After the port's device opened: the net stack left to the kernel, the
  // kernel's neighbours, the filter attached, addresses applied.
  absl::Status AttachNetdev(Port& port);
  // Every millisecond: the kernel's announcements, applied.
  void PollNetdevs();
  void ApplyInterface(Port& port, uint32_t changes);
  void ApplyAddresses(Port& port);
  void ApplyMtu(Port& port);
  void ApplyKernelNeighbour(Port& port, const NeighbourUpdate& u);
  // The filter's destinations: the port's addresses and multicast groups.
  void UpdateNetdevDestinations(Port& port);
  // The kernel joins (leaves) the RNIC's groups_joined (groups_left) on the
  // interface: it sends the IGMP/MLD reports and its MAC filter lets the
  // groups' frames in.
  void JoinKernelGroups(Port& port);
  bool NetdevLinkUp(const Port& port) const;
  // ResolveNeighbour for a netdev port: the kernel's table, and on a miss
  // the kernel asked to resolve.
  std::optional<MacAddr> ResolveFromKernel(Port& port, const IpAddr& ip);

  // Returns whether any frame was received or sent.
  bool PollPort(unsigned index, nic::TimeNs now);
  // Tells the port's RNICs (and shards) when its link went down or came
  // back: port state, IBV_EVENT_PORT_ERR/ACTIVE, link_downed. Returns the
  // link state it read.
  bool UpdateLink(Port& port);
  // The congestion point's departures into the RNIC and its PFC frames
  // out; returns whether it did anything.
  bool PollIngress(Port& port, nic::TimeNs now);
  // Earliest endpoint event over the ports (refreshed after every pass that
  // touched an endpoint, and after control requests, which may post work).
  nic::TimeNs RefreshNextEvents();
  bool any_endpoint() const;
  uint16_t ApplyFaults(Port& port, FaultInjector& faults, FaultState& held,
                       const FaultSite& site, rte_mbuf** in, uint16_t n,
                       rte_mbuf** out, size_t out_cap, nic::TimeNs now);
  // `priority`: the 802.1p priority the frame waits on while paused;
  // kUnpausable for MAC control frames, which a pause never holds.
  static constexpr uint8_t kUnpausable = 8;
  void QueueTx(Port& port, rte_mbuf* m, uint8_t priority = 0,
               uint64_t packet_id = 0);
  // Moves the backlog frames of `paused` priorities behind the others
  // (both in order); returns how many may go to the wire.
  static uint16_t HoldPaused(Port& port, uint8_t paused);
  // Returns how many frames went to the PMD.
  uint16_t FlushTx(Port& port, nic::TimeNs now);
  uint16_t LoopBack(Port& port, rte_mbuf** pkts, uint16_t n, nic::TimeNs now);
  void Slow(nic::TimeNs now);
  // When the RNIC's multicast groups changed: IGMPv3/MLDv2 reports of the
  // groups joined and left, sent again 0.5 s later (the
  // robustness variable 2 of RFC 3376 / RFC 3810), and the net stack's
  // list for queries.
  void ReportGroups(unsigned index, nic::TimeNs now);
  void SendGroupChanges(Port& port);
  void SendGroupReport(Port& port, std::span<const IpAddr> groups, bool ipv6,
                       GroupRecord record);
  nic::TimeNs idle_sleep_ns() const {
    return static_cast<nic::TimeNs>(config_.eal.idle_sleep_us) * 1000;
  }
  // Sleeps (idle_wait.h) unless work is or becomes pending; returns
  // whether it slept.
  bool Sleep(nic::TimeNs now, nic::TimeNs next_event,
             nic::TimeNs idle_sleep_ns);
  // One session server per port with a verbs socket (AttachRnics).
  absl::Status StartSessions();
  // Moves posted work requests into the RNICs; ports with new work are
  // made due for transmission in this very pass.
  void PollSessionPosts();
  // Moves completions and events out to the rings; returns whether the
  // sessions moved anything (posts included) since the last call.
  bool PollSessionCompletions();
  // --- eal.lcores > 1 (shard.h) ---
  absl::Status StartShards();
  // SessionServer::route_client of shard 0: the shard of the client's
  // process (the least loaded for a new one); false: shard 0 itself.
  bool RouteClient(unsigned port, int fd, const verbs::PeerCredentials& peer);
  // Drops the placements of processes that no longer exist.
  static void ForgetDeadProcesses(Port& port);
  // The shards' resolver: cache and own addresses only; a miss is queued
  // for this lcore to solicit (SolicitForShards).
  std::optional<MacAddr> ResolveFromShard(unsigned port, const IpAddr& ip);
  void SolicitForShards();
  // A frame the net stack gave to the RNIC: kept for shard 0 (true: the
  // caller passes it to the endpoint), or handed to other shards (false:
  // the caller no longer owns *m, which is set to nullptr when it was
  // handed over whole). `kicks` collects the shards to wake.
  bool DispatchToShards(Port& port, rte_mbuf** m, uint32_t* kicks);
  void KickShards(Port& port, uint32_t kicks);
  // Frames the shards built, into the port's TX queue while the backlog
  // has room; returns how many.
  uint16_t TakeShardTx(Port& port);
  void LaunchWorkers();
  void StopWorkers();
  static int WorkerMain(void* arg);
  // Writes one frame to `writer` with its packet id (the tag's, or a new
  // one), what the RNIC's verdict log says of it and `daemon`'s verdict
  // (counted in port.reasons by the caller). No-op when not capturing.
  void CaptureFrame(Port& port, CaptureWriter& writer, rte_mbuf* m,
                    capture::Direction dir, nic::TimeNs now,
                    const capture::DaemonVerdict* daemon = nullptr);
  // A daemon verdict on `m` (counted), captured if `writer` is open.
  void DaemonDrop(Port& port, CaptureWriter* writer, rte_mbuf* m,
                  capture::Direction dir, nic::TimeNs now, nic::DropReason r,
                  nic::VerdictAction action, uint64_t arg0 = 0,
                  uint64_t arg1 = 0);
  uint64_t NextPacketId(Port& port) {
    return port.verdicts != nullptr ? port.verdicts->NextId()
                                    : port.own_ids.NextId();
  }
  absl::Status OpenCaptures();
  // The captures' buffers to their files, every 100 ms.
  void FlushCaptures(nic::TimeNs now);
  // SIGHUP: the log file and captures are reopened (log rotation).
  void Reopen();
  // The RNICs' error notes: each error completion's cause logged, each QP
  // the RNIC moved to ERR/SQE logged and dumped (daemon_why.cc). The first
  // RNIC of each port's, or (`shards`, with them paused) the other shards'.
  void ReportErrors(nic::TimeNs now, bool shards = false);
  void ReportRnicErrors(size_t port, nic::Rnic& rnic, nic::TimeNs now);
  // Writes `qp`'s dump into recorder.dump_dir; returns the text file's
  // path, "" if none was written.
  std::string DumpQp(size_t port, const nic::Rnic& rnic, const nic::QpStory& qp,
                     nic::TimeNs now);
  // recorder.log_per_second as a token bucket; false: suppressed (counted).
  bool TakeLogToken(nic::TimeNs now);

  config::Config config_;
  bool eal_ready_ = false;
  bool leave_dpdk_to_exit_ = false;  // LeaveDpdkToProcessExit
  std::unique_ptr<TscClock> clock_;
  uint64_t wall_base_ns_ = 0;  // CLOCK_REALTIME at clock_ zero
  std::vector<std::unique_ptr<Port>> ports_;
  // Netdev ports between OpenNetdevs and AttachNetdev (indexed by port),
  // and the neighbour entries their interfaces had at the start.
  std::vector<std::unique_ptr<NetdevPort>> netdevs_;
  absl::flat_hash_map<unsigned, std::vector<NeighbourUpdate>>
      initial_neighbours_;
  std::vector<std::unique_ptr<RnicPort>> rnics_;
  std::unique_ptr<TestHooks> hooks_;
  // Indexed by port; nullptr for ports without a verbs socket. Declared
  // after rnics_ so that it is destroyed first (clients' QPs flushed while
  // their RNIC still exists).
  std::vector<std::unique_ptr<verbs::SessionServer>> sessions_;
  // Work moved by the session servers at the last look (cheap busy test).
  uint64_t session_work_ = 0;
  bool capture_on_ = false;
  double log_tokens_ = 0;
  nic::TimeNs log_refill_at_ = 0;
  uint64_t log_suppressed_ = 0;
  bool dump_dir_failed_ = false;  // warned once
  ControlServer control_;
  MetricsServer metrics_;
  nic::TimeNs next_fast_ = 0, next_slow_ = 0;
  ControlCadence session_control_;
  nic::TimeNs next_capture_flush_ = 0;
  uint64_t loops_ = 0;
  nic::TimeNs next_event_ = 0;  // RefreshNextEvents after the last pass
  // An endpoint was handed frames or asked for some (or something else
  // may have changed its state) since next_event_ was computed. A pass
  // that left every endpoint alone keeps next_event_: the endpoints'
  // event times are absolute, and walking the QPs for them was ~4 % of an
  // idle pass.
  bool endpoints_touched_ = true;
  IdleWait idle_;
  bool idle_ready_ = false;
  uint32_t idle_backoff_ = 1;  // idle_sleep_us multiplier (Sleep)
  // eal.lcores > 1: the workers run until workers_stop_; they wake this
  // lcore through main_wake_fd_ while main_sleeping_.
  std::atomic<bool> workers_stop_{false};
  bool workers_running_ = false;
  std::atomic<bool> main_sleeping_{false};
  int main_wake_fd_ = -1;
};

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_DAEMON_H_
