// Typed, validated settings of the rocemud daemon, loaded from YAML.
// Every field carries its documented default here; config/rocemu.yaml shows
// them all with comments. Loading is strict: the first unknown key, wrong
// type or out-of-range value is returned as one error naming
// file:line:column and the key path.
#ifndef ROCEMU_CONFIG_CONFIG_H_
#define ROCEMU_CONFIG_CONFIG_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace rocemu::config {

using MacAddr = std::array<uint8_t, 6>;
// IPv6 address, or IPv4 in its IPv4-mapped form ::ffff:a.b.c.d (the RoCEv2
// GID form).
using IpAddr = std::array<uint8_t, 16>;

enum class Hugepages : uint8_t {
  kAuto,  // use them when memory_mb of them are free, else --no-huge
  kNo,    // --no-huge
  kYes,   // require them (--in-memory); an error when too few are free
};

struct EalConfig {
  // Extra EAL arguments appended after the generated ones.
  std::vector<std::string> args;
  uint32_t lcore = 0;  // the (first) polling lcore
  // Polling lcores: lcore, lcore + 1, ... Above 1, each port's
  // applications are split by process across that many RNIC shards, one
  // per lcore (emulator/shard.h); the first lcore also runs the ports.
  uint32_t lcores = 1;
  Hugepages hugepages = Hugepages::kAuto;
  std::string file_prefix;  // empty: rocemu-<pid>
  // -m. A port's mbuf pool (8191 mbufs) is ~20 MiB at MTU 1500 and ~45
  // MiB at 4200: 256 fits four ports at 4200 with room for the rest. With
  // hugepages this many are taken at start (the heap may grow beyond);
  // with --no-huge it is the ceiling, touched only where used.
  uint32_t memory_mb = 256;
  std::string log_level = "*:warning";
  // 0: poll without pause (lowest latency, one core busy). Otherwise,
  // after idle_spin_us without work, the loop sleeps until a doorbell, a
  // frame (ports with RX interrupts), a socket or a timer wakes it; a port
  // without RX interrupts is looked at every idle_sleep_us meanwhile.
  uint32_t idle_sleep_us = 50;
  uint32_t idle_spin_us = 50;  // docs/performance.md, issue 37
  // A pass that moved nothing (no frame in or out, no ring entry) calls
  // sched_yield(): a task sharing this core (the other daemon of a memif
  // pair, an application spinning on its CQ) runs now instead of at the
  // end of the scheduler's slice, and a core with nothing else runnable
  // returns at once. false: spin without syscalls (a dedicated core).
  bool idle_yield = true;
};

struct IpPrefix {
  IpAddr addr{};  // IPv4 as ::ffff:a.b.c.d
  bool ipv6 = false;
  uint8_t prefix_len = 0;
};

struct StaticNeighbour {
  IpAddr ip{};
  bool ipv6 = false;
  MacAddr mac{};
};

enum class EcnMode : uint8_t { kNotEct, kEct0, kEct1 };

struct TrafficClassConfig {
  uint8_t roce_dscp = 26;
  uint8_t roce_prio = 3;
  uint8_t cnp_dscp = 48;
  uint8_t cnp_prio = 6;
  EcnMode ecn = EcnMode::kEct0;
};

// Rates are probabilities in [0, 1] applied per frame.
struct FaultConfig {
  double drop = 0;
  double reorder = 0;  // the frame is held back behind the next one
  double duplicate = 0;
  double corrupt = 0;  // one bit flipped past the Ethernet header
  double delay = 0;    // the frame is held for delay_us
  uint32_t delay_us = 100;
  uint64_t seed = 1;
  bool rx = true;   // apply to received frames
  bool tx = false;  // apply to sent frames
  bool enabled() const {
    return drop > 0 || reorder > 0 || duplicate > 0 || corrupt > 0 || delay > 0;
  }
};

// A congestion point in front of the port's RNIC: the egress queue of the
// last switch hop, modelled on the daemon's receive side so that a
// bottleneck exists between two hosts with fast links. Received RoCE frames
// of the RoCE priority (traffic_class.roce_prio) wait in a queue drained at
// rate_mbps; the top-level `ecn` RED profile marks ECT frames CE on
// dequeue; with `pfc`, crossing pfc.xoff_bytes sends the link's senders a
// PFC XOFF for that priority (XON below pfc.xon_bytes). Other priorities
// (CNPs) pass ahead, as a switch's strict-priority queue lets them.
struct CongestionPointPortConfig {
  bool enabled = false;
  uint32_t rate_mbps = 1000;
  uint32_t buffer_bytes = 1u << 20;  // tail drop beyond
  bool pfc = true;
};

// How a netdev port reaches its interface (docs/daemon.md, "On a host's
// own NIC").
enum class NetdevMode : uint8_t {
  kAuto,      // AF_XDP where an XDP program can be attached, else af_packet
  kAfXdp,     // AF_XDP only (an error where it cannot be had)
  kAfPacket,  // af_packet and a tc ingress drop of the RNIC's frames
};

struct PortConfig {
  std::string name;
  std::string devargs;  // e.g. net_tap0,iface=rocemu0
  // A kernel interface the RNIC shares with the kernel, as rxe does
  // (instead of devargs): its MAC, MTU, link state and addresses are the
  // port's, followed at run time; the kernel keeps answering ARP, ND and
  // ICMP on it and keeps every frame that is not the RNIC's.
  std::string netdev;
  NetdevMode netdev_mode = NetdevMode::kAuto;
  std::optional<MacAddr> mac;       // default: the PMD's MAC
  std::vector<IpPrefix> addresses;  // IPv4 and IPv6, with prefix length
  uint32_t mtu = 1500;              // Ethernet MTU (IP packet size)
  std::vector<uint16_t> pkeys = {0xFFFF};
  std::vector<StaticNeighbour> neighbours;
  TrafficClassConfig traffic_class;
  FaultConfig faults;
  // The link's rate: PFC and PAUSE quanta (512 bit times) are timed at it,
  // for pauses received and sent.
  uint32_t link_speed_mbps = 100000;
  // 802.1Q VLAN of everything the port originates (RNIC frames with PCP =
  // their priority, ARP/ND with PCP 0); unset: untagged. Replies follow
  // the request's tag.
  std::optional<uint16_t> vlan_id;
  CongestionPointPortConfig congestion_point;
  uint32_t neighbour_timeout_s = 300;
  // The verbs session socket of this port. The first port falls back to
  // verbs.socket; the others get no socket unless this is set.
  std::string verbs_socket;

  // GID table derived from addresses (index order = address order); the
  // IPv6 link-local GID is derived from the MAC once it is known.
  std::vector<IpAddr> Gids() const;
};

struct PfcConfig {
  // Priorities PFC is enabled on; default: the RoCE priority 3.
  std::array<bool, 8> enabled = {false, false, false, true,
                                 false, false, false, false};
  uint32_t xoff_bytes = 96 * 1024;
  uint32_t xon_bytes = 48 * 1024;
  uint16_t pause_quanta = 0xFFFF;
};

// RED/ECN marking of the congestion-point model.
struct EcnConfig {
  bool enabled = true;
  uint32_t kmin_bytes = 40 * 1024;
  uint32_t kmax_bytes = 160 * 1024;
  uint32_t pmax_percent = 20;
};

// DCQCN with the NVIDIA (mlx5) parameter names and firmware defaults
// (reference: congestion.md §2.3).
struct DcqcnConfig {
  bool enabled = true;
  uint8_t prio_mask = 0xFF;  // ROCE_CC_PRIO_MASK
  // Notification point.
  uint32_t np_min_time_between_cnps = 2;  // µs
  uint8_t np_cnp_dscp = 48;
  uint8_t np_cnp_prio = 6;
  // Reaction point.
  uint32_t rp_dce_tcp_rtt = 1;               // µs
  uint32_t rp_dce_tcp_g = 1019;              // /1024
  uint32_t rp_initial_alpha_value = 1023;    // /1024
  uint32_t rp_rate_to_set_on_first_cnp = 0;  // Mb/s, 0 = no set
  uint32_t rp_gd = 11;
  uint32_t rp_min_dec_fac = 50;                // %
  uint32_t rp_min_rate = 1;                    // Mb/s
  uint32_t rp_rate_reduce_monitor_period = 4;  // µs
  uint32_t rp_time_reset = 300;                // µs
  uint32_t rp_byte_reset = 32767;              // 64-byte units
  uint32_t rp_threshold = 1;
  uint32_t rp_ai_rate = 5;    // Mb/s
  uint32_t rp_hai_rate = 50;  // Mb/s
  uint32_t rp_max_rate = 0;   // Mb/s, 0 = line rate
  bool rp_clamp_tgt_rate = false;
  bool rp_clamp_tgt_rate_ati = true;
};

enum class CaptureFormat : uint8_t { kPcapng, kPcap };

struct CaptureConfig {
  bool enabled = false;
  // "{port}" is replaced by the port name. The same path for both: one
  // file, each frame marked inbound or outbound (pcapng only).
  std::string rx_path = "/var/lib/rocemu/{port}-rx.pcapng";
  std::string tx_path = "/var/lib/rocemu/{port}-tx.pcapng";
  uint64_t rotate_bytes = 64ull << 20;  // 0: never rotate
  uint32_t snaplen = 65535;
  // pcapng carries each frame's direction, packet id, verdict and comment
  // (emulator/capture/pcapng_writer.h); pcap is the classic format.
  CaptureFormat format = CaptureFormat::kPcapng;
};

// Why QPs fail (nic/flight_recorder.h, docs/debugging.md).
struct RecorderConfig {
  // Events each connected QP's flight recorder keeps; 0: none.
  uint32_t events = 64;
  // Where a QP's dump goes when it enters ERR or SQE (<port>-qp<N>-<time>.txt
  // and .pcapng); "": the log only.
  std::string dump_dir = "/var/lib/rocemu/why";
  // Error completions (and QP errors) logged per second at most; the rest
  // are counted and summarised.
  uint32_t log_per_second = 20;
};

struct ControlConfig {
  std::string socket_path = "/run/rocemu/rocemud.sock";
  uint32_t socket_mode = 0660;
  uint16_t prometheus_port = 0;  // 0: off; listens on 127.0.0.1 only
  // Daemon-side verbs over the control socket (reg_mr, create_qp,
  // post_send, ...) for tests until the application library lands. Off by
  // default: any local client with socket access could drive the RNIC.
  bool test_hooks = false;
};

// What each user (uid) may hold across the daemon's ports; 0: no cap.
// Beyond a cap the request fails with ENOMEM (verbs/server/resource_limits.h).
struct VerbsUserCaps {
  uint64_t max_pds = 0;
  uint64_t max_cqs = 0;
  uint64_t max_qps = 0;
  uint64_t max_mrs = 0;
  // The shared rings of the user's send, receive, shared receive and
  // completion queues.
  uint64_t max_queue_bytes = 0;
};

struct VerbsLimitsConfig {
  // Registered memory counts against the registering process's
  // RLIMIT_MEMLOCK unless it has CAP_IPC_LOCK, as rxe and mlx5 count
  // pinned pages (on-demand paging and device memory pin nothing).
  bool memlock = true;
  VerbsUserCaps per_uid;
};

// The application library's attach point (verbs/server/session_server.h): one
// Unix socket per port that has one.
struct VerbsConfig {
  bool enabled = true;
  std::string socket_path = "/run/rocemu/verbs.sock";  // the first port's
  uint32_t socket_mode = 0660;
  // Peer uids (SO_PEERCRED) allowed to attach; empty: anyone who can open
  // the socket.
  std::vector<uint32_t> allowed_uids;
  // Work requests taken from one QP's rings per poll (fairness between QPs).
  uint32_t post_budget = 64;
  VerbsLimitsConfig limits;
};

enum class LogLevel : uint8_t { kDebug, kInfo, kWarning, kError };

struct LoggingConfig {
  LogLevel level = LogLevel::kInfo;
  std::string file;  // empty: stderr
};

struct Config {
  std::string source;  // file name the config was read from
  EalConfig eal;
  std::vector<PortConfig> ports;
  PfcConfig pfc;
  EcnConfig ecn;
  DcqcnConfig dcqcn;
  CaptureConfig capture;
  RecorderConfig recorder;
  ControlConfig control;
  VerbsConfig verbs;
  LoggingConfig logging;

  // The verbs socket path of port `port`, or "" when that port has none
  // (verbs disabled, or a port other than the first without verbs_socket).
  std::string VerbsSocketPath(size_t port) const;
};

// The configuration `rocemud --netdev IFACE` runs with: every default, one
// netdev port named after the interface (device rocemu_IFACE), and the
// control and verbs sockets in `run_dir` named after it too
// (rocemud-IFACE.sock, verbs-IFACE.sock), so that one daemon per interface
// can run side by side.
absl::StatusOr<Config> NetdevConfig(std::string_view iface,
                                    std::string_view run_dir);

// Loads and validates. On error the status message is one line:
// "<file>:<line>:<col>: <key.path>: <problem>".
absl::StatusOr<Config> LoadConfigFile(const std::string& path);
absl::StatusOr<Config> LoadConfigString(std::string_view yaml,
                                        std::string_view source_name);

std::string_view LogLevelName(LogLevel level);
absl::StatusOr<LogLevel> ParseLogLevel(std::string_view name);
std::string FormatMac(const MacAddr& mac);
std::string FormatIp(const IpAddr& ip, bool ipv6);

}  // namespace rocemu::config

#endif  // ROCEMU_CONFIG_CONFIG_H_
