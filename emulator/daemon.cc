#include "emulator/daemon.h"

#include <arpa/inet.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "emulator/eal_args.h"
#include "emulator/logging.h"
#include "protocol/pfc.h"

namespace rocemu::emulator {
namespace {

constexpr nic::TimeNs kFastPeriod = 1'000'000;      // control sockets
constexpr nic::TimeNs kSlowPeriod = 1'000'000'000;  // stats, neighbours
constexpr nic::TimeNs kReorderWait = 1'000'000;     // if no frame follows
// Verbs control messages (create_qp, modify_qp, ...) are answered within
// this much loop time: interactive for applications, one epoll_wait per
// period.
constexpr nic::TimeNs kSessionControlPeriod = 150'000;
// Shorter waits are not worth two epoll syscalls and the wake-up latency.
constexpr nic::TimeNs kMinSleep = 20'000;
constexpr uint32_t kMaxIdleBackoff = 16;

uint64_t WallNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 +
         static_cast<uint64_t>(ts.tv_nsec);
}

// Every per-port counter with its exported name, in one place for JSON and
// Prometheus.
template <typename F>
void ForEachCounter(const PortCounters& c, const NetCounters& n,
                    const FaultCounters& rx, const FaultCounters& tx, F f) {
  f("rx_packets", c.rx_packets);
  f("rx_bytes", c.rx_bytes);
  f("tx_packets", c.tx_packets);
  f("tx_bytes", c.tx_bytes);
  f("tx_dropped", c.tx_dropped);
  f("tx_ring_full", c.tx_ring_full);
  f("tx_backpressure", c.tx_backpressure);
  f("rx_segmented", c.rx_segmented);
  f("rx_nic_no_endpoint", c.rx_nic_no_endpoint);
  f("tx_nombuf", c.tx_nombuf);
  f("loopback_packets", c.loopback_packets);
  f("rx_missed", c.rx_missed);
  f("rx_errors", c.rx_errors);
  f("tx_errors", c.tx_errors);
  f("rx_nombuf", c.rx_nombuf);
  f("rx_arp_requests", n.rx_arp_requests);
  f("rx_arp_replies", n.rx_arp_replies);
  f("tx_arp_requests", n.tx_arp_requests);
  f("tx_arp_replies", n.tx_arp_replies);
  f("rx_nd_solicits", n.rx_nd_solicits);
  f("rx_nd_adverts", n.rx_nd_adverts);
  f("tx_nd_solicits", n.tx_nd_solicits);
  f("tx_nd_adverts", n.tx_nd_adverts);
  f("rx_icmp_echo", n.rx_icmp_echo);
  f("rx_icmpv6_echo", n.rx_icmpv6_echo);
  f("tx_icmp_echo_reply", n.tx_icmp_echo_reply);
  f("tx_icmpv6_echo_reply", n.tx_icmpv6_echo_reply);
  f("rx_nic", n.rx_nic);
  f("rx_not_for_us", n.rx_not_for_us);
  f("rx_unhandled", n.rx_unhandled);
  f("rx_malformed", n.rx_malformed);
  f("rx_bad_checksum", n.rx_bad_checksum);
  f("reply_too_big", n.reply_too_big);
  f("rx_fault_dropped", rx.fault_dropped);
  f("rx_fault_reordered", rx.fault_reordered);
  f("rx_fault_duplicated", rx.fault_duplicated);
  f("rx_fault_corrupted", rx.fault_corrupted);
  f("rx_fault_delayed", rx.fault_delayed);
  f("tx_fault_dropped", tx.fault_dropped);
  f("tx_fault_reordered", tx.fault_reordered);
  f("tx_fault_duplicated", tx.fault_duplicated);
  f("tx_fault_corrupted", tx.fault_corrupted);
  f("tx_fault_delayed", tx.fault_delayed);
}

// Readies a verbs socket path: its directory exists (0755 when created),
// and no live daemon listens there (a stale socket is left for the session
// server to replace).
absl::Status PrepareSessionSocket(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    std::string dir = path.substr(0, slash);
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return absl::UnavailableError(
          absl::StrCat("cannot create ", dir, ": ", std::strerror(errno)));
    }
  }
  struct stat st;
  if (lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
    return absl::OkStatus();
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(),
              std::min(path.size(), sizeof(addr.sun_path) - 1));
  int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  bool live = probe >= 0 && connect(probe, reinterpret_cast<sockaddr*>(&addr),
                                    sizeof(addr)) == 0;
  if (probe >= 0) close(probe);
  if (live) {
    return absl::AlreadyExistsError(
        absl::StrCat("another daemon is listening on ", path));
  }
  return absl::OkStatus();
}

// Everything the session server has moved so far; a change means the rings
// carried work since the last look.
uint64_t SessionWork(const verbs::SessionCounters& c) {
  return c.sq_wqes + c.rq_wqes + c.srq_wqes + c.cqes + c.bad_wqes;
}

}  // namespace

Daemon::Daemon(config::Config config) : config_(std::move(config)) {}

Daemon::~Daemon() { Shutdown(); }

absl::Status Daemon::Init() {
  std::vector<std::string> args =
      BuildEalArgs(config_, getpid(), HostHasHugepages());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  ROCEMU_LOG_INFO("EAL: %s", absl::StrJoin(args, " "));
  if (rte_eal_init(static_cast<int>(argv.size()), argv.data()) < 0) {
    return absl::UnavailableError(
        absl::StrCat("DPDK EAL init failed: ", rte_strerror(rte_errno)));
  }
  eal_ready_ = true;
  clock_ = std::make_unique<TscClock>();
  wall_base_ns_ = WallNs();
  int socket_id = static_cast<int>(rte_socket_id());

  for (unsigned i = 0; i < config_.ports.size(); ++i) {
    auto port = std::make_unique<Port>();
    port->index = static_cast<uint16_t>(ports_.size());
    port->config = config_.ports[i];
    absl::StatusOr<DpdkPort> dev = DpdkPort::Open(port->config, i, socket_id);
    if (!dev.ok()) return dev.status();
    port->dev.emplace(std::move(*dev));
    NeighbourCache::Options nopts;
    nopts.reachable_ns =
        static_cast<nic::TimeNs>(port->config.neighbour_timeout_s) *
        1'000'000'000;
    port->neighbours = NeighbourCache(nopts);
    for (const config::StaticNeighbour& n : port->config.neighbours) {
      port->neighbours.AddStatic(n.ip, n.mac);
    }
    std::vector<NetAddress> addrs;
    for (const config::IpPrefix& p : port->config.addresses) {
      addrs.push_back({p.addr, p.ipv6, p.prefix_len});
    }
    port->stack =
        std::make_unique<NetStack>(port->dev->mac(), addrs, &port->neighbours);
    port->stack->set_vlan(port->config.vlan_id);
    port->rx_faults =
        std::make_unique<FaultInjector>(port->config.faults, 2 * i);
    port->tx_faults =
        std::make_unique<FaultInjector>(port->config.faults, 2 * i + 1);
    absl::StatusOr<std::unique_ptr<IngressCongestion>> ingress =
        IngressCongestion::Create(config_, i);
    if (!ingress.ok()) return ingress.status();
    port->ingress = *std::move(ingress);
    std::string addr_list;
    for (const config::IpPrefix& p : port->config.addresses) {
      absl::StrAppend(&addr_list, addr_list.empty() ? "" : " ",
                      config::FormatIp(p.addr, p.ipv6), "/", p.prefix_len);
    }
    ROCEMU_LOG_INFO("port %s: %s up, dpdk port %u, mac %s, mtu %u, %s",
                    port->config.name, port->config.devargs,
                    port->dev->port_id(), config::FormatMac(port->dev->mac()),
                    port->config.mtu, addr_list);
    ports_.push_back(std::move(port));
  }
  if (config_.capture.enabled) {
    if (absl::Status s = SetCapture(true); !s.ok()) return s;
  }
  if (absl::Status s = control_.Listen(
          config_.control.socket_path, config_.control.socket_mode,
          [this](std::string_view req) { return HandleControl(req); });
      !s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat("control socket: ", s.message()));
  }
  if (config_.control.prometheus_port != 0) {
    if (absl::Status s = metrics_.Listen(config_.control.prometheus_port,
                                         [this] { return PrometheusText(); });
        !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("prometheus: ", s.message()));
    }
  }
  ROCEMU_LOG_INFO("control socket %s", config_.control.socket_path);
  return absl::OkStatus();
}

absl::Status Daemon::OpenCaptures() {
  for (auto& p : ports_) {
    std::string rx = absl::StrReplaceAll(config_.capture.rx_path,
                                         {{"{port}", p->config.name}});
    std::string tx = absl::StrReplaceAll(config_.capture.tx_path,
                                         {{"{port}", p->config.name}});
    if (absl::Status s = p->rx_capture.Open(rx, config_.capture.snaplen,
                                            config_.capture.rotate_bytes);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = p->tx_capture.Open(tx, config_.capture.snaplen,
                                            config_.capture.rotate_bytes);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status Daemon::SetCapture(bool enabled) {
  if (enabled == capture_on_) return absl::OkStatus();
  if (enabled) {
    absl::Status s = OpenCaptures();
    if (!s.ok()) {
      for (auto& p : ports_) {
        p->rx_capture.Close();
        p->tx_capture.Close();
      }
      return s;
    }
  } else {
    for (auto& p : ports_) {
      p->rx_capture.Close();
      p->tx_capture.Close();
    }
  }
  capture_on_ = enabled;
  ROCEMU_LOG_INFO("capture %s", enabled ? "on" : "off");
  return absl::OkStatus();
}

void Daemon::Capture(PcapWriter& writer, rte_mbuf* const* m, uint16_t n,
                     nic::TimeNs now) {
  if (!writer.is_open()) return;
  uint64_t wall = wall_base_ns_ + now;
  for (uint16_t i = 0; i < n; ++i) {
    writer.Write(
        {rte_pktmbuf_mtod(m[i], const uint8_t*), rte_pktmbuf_data_len(m[i])},
        wall);
  }
}

uint16_t Daemon::ApplyFaults(FaultInjector& faults, FaultState& held,
                             rte_mempool* pool, rte_mbuf** in, uint16_t n,
                             rte_mbuf** out, size_t out_cap, nic::TimeNs now) {
  size_t k = 0;
  // Delayed frames whose time has come go first (they were sent first).
  while (held.count > 0 && held.ring[held.head].release <= now && k < out_cap) {
    out[k++] = held.ring[held.head].m;
    held.head = (held.head + 1) % FaultState::kCapacity;
    --held.count;
  }
  for (uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = in[i];
    if (k + 2 >= out_cap) {  // no room left for faults: pass through
      out[k++] = m;
      continue;
    }
    switch (faults.Decide()) {
      case FaultAction::kPass:
        break;
      case FaultAction::kDrop:
        rte_pktmbuf_free(m);
        continue;
      case FaultAction::kCorrupt: {
        uint32_t bit = faults.CorruptBit(rte_pktmbuf_data_len(m));
        rte_pktmbuf_mtod(m, uint8_t*)[bit / 8] ^=
            static_cast<uint8_t>(1u << (bit % 8));
        break;
      }
      case FaultAction::kDuplicate:
        if (rte_mbuf* copy = rte_pktmbuf_copy(m, pool, 0, UINT32_MAX)) {
          out[k++] = copy;
        }
        break;
      case FaultAction::kReorder:
        if (held.reorder == nullptr) {
          held.reorder = m;
          held.reorder_deadline = now + kReorderWait;
          continue;
        }
        break;
      case FaultAction::kDelay:
        if (held.count < FaultState::kCapacity) {
          size_t tail = (held.head + held.count) % FaultState::kCapacity;
          held.ring[tail] = {m, now + faults.delay_ns()};
          ++held.count;
          continue;
        }
        break;
    }
    out[k++] = m;
    // A held-back frame goes out right behind the frame that overtook it.
    if (held.reorder != nullptr && held.reorder != m) {
      out[k++] = held.reorder;
      held.reorder = nullptr;
    }
  }
  if (held.reorder != nullptr && now >= held.reorder_deadline && k < out_cap) {
    out[k++] = held.reorder;
    held.reorder = nullptr;
  }
  return static_cast<uint16_t>(k);
}

void Daemon::QueueTx(Port& port, rte_mbuf* m, uint8_t priority) {
  if (port.tx_count == std::size(port.tx_batch)) {
    ++port.counters.tx_dropped;
    rte_pktmbuf_free(m);
    return;
  }
  // The priority rides in the mbuf's user tag (unused on TX by the PMDs)
  // through fault injection and the backlog.
  m->hash.usr = priority;
  port.tx_batch[port.tx_count++] = m;
}

uint16_t Daemon::HoldPaused(Port& port, uint8_t paused) {
  rte_mbuf* held[Port::kBacklog];
  uint16_t ready = 0, nheld = 0;
  for (uint16_t i = 0; i < port.tx_backlog_count; ++i) {
    rte_mbuf* m = port.tx_backlog[i];
    const uint32_t prio = m->hash.usr;
    if (prio < 8 && ((paused >> prio) & 1) != 0) {
      held[nheld++] = m;
    } else {
      port.tx_backlog[ready++] = m;
    }
  }
  std::memcpy(port.tx_backlog + ready, held, nheld * sizeof(rte_mbuf*));
  return ready;
}

// Frames to our own MAC (QPs of this RNIC talking to each other, or a UD
// AH to our own GID) never reach the wire: the RNIC loops them back, as a
// ConnectX does, after fault injection and capture saw them. Returns how
// many of pkts[0, n) remain for the wire, compacted in order.
uint16_t Daemon::LoopBack(Port& port, rte_mbuf** pkts, uint16_t n,
                          nic::TimeNs now) {
  const MacAddr& own = port.stack->mac();
  nic::RxFrame looped[kBurst * 8];
  rte_mbuf* looped_bufs[kBurst * 8];
  size_t nlooped = 0;
  uint16_t kept = 0;
  for (uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = pkts[i];
    const auto* d = rte_pktmbuf_mtod(m, const uint8_t*);
    if (port.endpoint != nullptr && nlooped < std::size(looped) &&
        rte_pktmbuf_data_len(m) >= own.size() &&
        std::memcmp(d, own.data(), own.size()) == 0) {
      looped[nlooped] = {d, rte_pktmbuf_data_len(m)};
      looped_bufs[nlooped++] = m;
    } else {
      pkts[kept++] = m;
    }
  }
  if (nlooped > 0) {
    port.counters.loopback_packets += nlooped;
    port.endpoint->Receive(port.index, {looped, nlooped}, now);
    rte_pktmbuf_free_bulk(looped_bufs, static_cast<unsigned>(nlooped));
  }
  return kept;
}

uint16_t Daemon::FlushTx(Port& port, nic::TimeNs now) {
  rte_mbuf* staged[kBurst * 8];
  rte_mbuf** pkts = port.tx_batch;
  uint16_t n = port.tx_count;
  port.tx_count = 0;
  if (port.tx_faults->enabled() && port.config.faults.tx) {
    n = ApplyFaults(*port.tx_faults, port.tx_held, port.dev->pool(), pkts, n,
                    staged, std::size(staged), now);
    pkts = staged;
  }
  if (n > 0) {
    Capture(port.tx_capture, pkts, n, now);
    n = LoopBack(port, pkts, n, now);
  }
  for (uint16_t i = 0; i < n; ++i) {
    if (port.tx_backlog_count == Port::kBacklog) {
      ++port.counters.tx_dropped;  // counted, never silent
      rte_pktmbuf_free(pkts[i]);
      continue;
    }
    port.tx_backlog[port.tx_backlog_count++] = pkts[i];
  }
  if (port.tx_backlog_count == 0) return 0;
  uint16_t ready = port.tx_backlog_count;
  if (port.endpoint != nullptr) {
    const uint8_t paused = port.endpoint->PausedPriorities(now);
    if (paused != 0) ready = HoldPaused(port, paused);
  }
  port.tx_paused_count = static_cast<uint16_t>(port.tx_backlog_count - ready);
  const uint16_t sent = ready == 0 ? 0
                                   : rte_eth_tx_burst(port.dev->port_id(), 0,
                                                      port.tx_backlog, ready);
  uint64_t bytes = 0;
  for (uint16_t i = 0; i < sent; ++i) {
    bytes += rte_pktmbuf_pkt_len(port.tx_backlog[i]);
  }
  port.counters.tx_packets += sent;
  port.counters.tx_bytes += bytes;
  if (sent < ready) ++port.counters.tx_ring_full;
  if (sent < port.tx_backlog_count) {
    std::memmove(port.tx_backlog, port.tx_backlog + sent,
                 (port.tx_backlog_count - sent) * sizeof(rte_mbuf*));
  }
  port.tx_backlog_count = static_cast<uint16_t>(port.tx_backlog_count - sent);
  return sent;
}

bool Daemon::PollPort(unsigned index, nic::TimeNs now) {
  Port& port = *ports_[index];
  nic::FrameEndpoint* const endpoint = port.endpoint;
  bool endpoint_due = endpoint != nullptr && now >= port.next_event;
  rte_mbuf* rx[kBurst];
  rte_mbuf* staged[kBurst * 3];
  uint16_t n = rte_eth_rx_burst(port.dev->port_id(), 0, rx, kBurst);
  bool busy = n > 0;
  for (uint16_t i = 0; i < n; ++i) {
    port.counters.rx_bytes += rte_pktmbuf_pkt_len(rx[i]);
  }
  port.counters.rx_packets += n;
  rte_mbuf** pkts = rx;
  if (port.rx_faults->enabled() && port.config.faults.rx) {
    n = ApplyFaults(*port.rx_faults, port.rx_held, port.dev->pool(), rx, n,
                    staged, std::size(staged), now);
    pkts = staged;
  }
  if (n > 0) {
    Capture(port.rx_capture, pkts, n, now);
    nic::RxFrame frames[std::size(staged)];
    size_t nic_frames = 0;
    for (uint16_t i = 0; i < n; ++i) {
      rte_mbuf* m = pkts[i];
      if (m->nb_segs > 1) {
        ++port.counters.rx_segmented;
        continue;
      }
      if (port.spare == nullptr) {
        port.spare = rte_pktmbuf_alloc(port.dev->pool());
      }
      std::span<uint8_t> reply;
      if (port.spare != nullptr) {
        reply = {rte_pktmbuf_mtod(port.spare, uint8_t*),
                 std::min<size_t>(rte_pktmbuf_tailroom(port.spare),
                                  port.dev->max_frame())};
      }
      size_t reply_len = 0;
      std::span<const uint8_t> data(rte_pktmbuf_mtod(m, const uint8_t*),
                                    rte_pktmbuf_data_len(m));
      switch (port.stack->Receive(data, now, reply, &reply_len)) {
        case RxVerdict::kReply:
          port.spare->data_len = static_cast<uint16_t>(reply_len);
          port.spare->pkt_len = static_cast<uint32_t>(reply_len);
          QueueTx(port, port.spare);
          port.spare = nullptr;
          break;
        case RxVerdict::kNic:
          if (port.ingress != nullptr && endpoint != nullptr &&
              port.ingress->Enqueue(m, now) !=
                  IngressCongestion::Offer::kPass) {
            pkts[i] = nullptr;  // queued (or tail-dropped and freed)
            break;
          }
          frames[nic_frames++] = {data.data(),
                                  static_cast<uint32_t>(data.size())};
          break;
        case RxVerdict::kConsumed:
        case RxVerdict::kDropped:
          break;
      }
    }
    if (nic_frames > 0) {
      if (endpoint != nullptr) {
        endpoint->Receive(static_cast<uint16_t>(index), {frames, nic_frames},
                          now);
        endpoint_due = true;
      } else {
        port.counters.rx_nic_no_endpoint += nic_frames;
      }
    }
    rte_pktmbuf_free_bulk(pkts, n);
  }

  if (port.ingress != nullptr && endpoint != nullptr &&
      PollIngress(port, now)) {
    busy = true;
    endpoint_due = true;
  }

  // Back-pressure: with a burst already waiting for the wire, the RNIC
  // keeps its frames (it is asked again next pass).
  if (endpoint != nullptr && endpoint_due &&
      port.tx_backlog_count - port.tx_paused_count >= kBurst) {
    ++port.counters.tx_backpressure;
    busy = true;
  } else if (endpoint != nullptr && endpoint_due) {
    rte_mbuf* bufs[kBurst];
    if (rte_pktmbuf_alloc_bulk(port.dev->pool(), bufs, kBurst) != 0) {
      ++port.counters.tx_nombuf;
    } else {
      nic::TxFrame tx[kBurst];
      for (uint16_t i = 0; i < kBurst; ++i) {
        tx[i].data = rte_pktmbuf_mtod(bufs[i], uint8_t*);
        tx[i].capacity = std::min<uint32_t>(rte_pktmbuf_tailroom(bufs[i]),
                                            port.dev->max_frame());
      }
      size_t filled = endpoint->Transmit(static_cast<uint16_t>(index), tx, now);
      for (size_t i = 0; i < filled; ++i) {
        bufs[i]->data_len = static_cast<uint16_t>(tx[i].len);
        bufs[i]->pkt_len = tx[i].len;
        QueueTx(port, bufs[i], tx[i].priority);
      }
      if (filled < kBurst) {
        rte_pktmbuf_free_bulk(bufs + filled,
                              static_cast<unsigned>(kBurst - filled));
      }
    }
  }
  // Frames held by a pause are not work: the pause's end is an endpoint
  // event (NextEventTime) that wakes the loop.
  busy |=
      FlushTx(port, now) > 0 || port.tx_backlog_count > port.tx_paused_count;
  return busy;
}

bool Daemon::PollIngress(Port& port, nic::TimeNs now) {
  bool did = false;
  rte_mbuf* out[kBurst];
  size_t n;
  while ((n = port.ingress->Dequeue(now, out)) > 0) {
    nic::RxFrame frames[kBurst];
    for (size_t i = 0; i < n; ++i) {
      frames[i] = {rte_pktmbuf_mtod(out[i], const uint8_t*),
                   rte_pktmbuf_data_len(out[i])};
    }
    port.endpoint->Receive(port.index, {frames, n}, now);
    rte_pktmbuf_free_bulk(out, static_cast<unsigned>(n));
    did = true;
  }
  // XOFF/XON to the link's senders: a MAC Control frame, never held by a
  // pause of our own.
  uint8_t pfc[protocol::kMacControlFrameLen];
  const size_t len = port.ingress->PollPfc(now, port.stack->mac(), pfc);
  if (len > 0) {
    rte_mbuf* m = rte_pktmbuf_alloc(port.dev->pool());
    if (m == nullptr) {
      ++port.counters.tx_nombuf;
      return did;
    }
    std::memcpy(rte_pktmbuf_mtod(m, uint8_t*), pfc, len);
    m->data_len = static_cast<uint16_t>(len);
    m->pkt_len = static_cast<uint32_t>(len);
    QueueTx(port, m, kUnpausable);
    did = true;
  }
  return did;
}

nic::TimeNs Daemon::RefreshNextEvents() {
  nic::TimeNs next = nic::kNever;
  for (auto& p : ports_) {
    if (p->endpoint == nullptr) continue;
    if (p->ingress != nullptr) {
      next = std::min(next, p->ingress->NextEventTime());
    }
    p->next_event = p->endpoint->NextEventTime();
    next = std::min(next, p->next_event);
  }
  return next;
}

bool Daemon::any_endpoint() const {
  for (const auto& p : ports_) {
    if (p->endpoint != nullptr) return true;
  }
  return false;
}

absl::Status Daemon::AttachRnics() {
  std::vector<RnicPort*> raw;
  std::vector<std::string> names;
  for (unsigned i = 0; i < ports_.size(); ++i) {
    absl::StatusOr<std::unique_ptr<RnicPort>> r = RnicPort::Create(
        config_, i, ports_[i]->dev->mac(),
        [this, i](const IpAddr& ip) { return ResolveNeighbour(i, ip); });
    if (!r.ok()) return r.status();
    raw.push_back(r->get());
    names.push_back(ports_[i]->config.name);
    rnics_.push_back(std::move(*r));
    AttachEndpoint(i, &rnics_.back()->rnic());
  }
  if (config_.control.test_hooks) {
    hooks_ = std::make_unique<TestHooks>(std::move(raw), std::move(names));
    ROCEMU_LOG_WARNING(
        "control.test_hooks is on: any client of %s can drive the RNIC",
        config_.control.socket_path);
  }
  return StartSessions();
}

absl::Status Daemon::StartSessions() {
  sessions_.resize(ports_.size());
  for (unsigned i = 0; i < ports_.size() && i < rnics_.size(); ++i) {
    const std::string path = config_.VerbsSocketPath(i);
    if (path.empty()) continue;
    if (absl::Status s = PrepareSessionSocket(path); !s.ok()) {
      return absl::Status(
          s.code(), absl::StrCat("verbs socket of port ",
                                 ports_[i]->config.name, ": ", s.message()));
    }
    verbs::SessionServerOptions o;
    o.socket_path = path;
    o.socket_mode = static_cast<mode_t>(config_.verbs.socket_mode);
    o.allowed_uids.assign(config_.verbs.allowed_uids.begin(),
                          config_.verbs.allowed_uids.end());
    o.post_budget = config_.verbs.post_budget;
    o.device_name = "rocemu_" + ports_[i]->config.name;
    // GIDs are IPv4-mapped or IPv6 addresses, the form the neighbour cache
    // keys on: a destination GID is its own next-hop IP on the link.
    o.resolve_dmac =
        [this, i](const nic::Gid& gid) -> std::optional<protocol::MacAddr> {
      return ResolveNeighbour(i, gid);
    };
    absl::StatusOr<std::unique_ptr<verbs::SessionServer>> server =
        verbs::SessionServer::Create(rnics_[i]->rnic(), o);
    if (!server.ok()) {
      return absl::Status(
          server.status().code(),
          absl::StrCat("verbs socket of port ", ports_[i]->config.name, ": ",
                       server.status().message()));
    }
    sessions_[i] = std::move(*server);
    ROCEMU_LOG_INFO("port %s: device %s, verbs socket %s (mode %04o)",
                    ports_[i]->config.name, o.device_name, path,
                    config_.verbs.socket_mode);
  }
  // No socket at all (verbs.enabled: false): the loop skips sessions.
  if (std::all_of(sessions_.begin(), sessions_.end(),
                  [](const auto& s) { return s == nullptr; })) {
    sessions_.clear();
  }
  return absl::OkStatus();
}

bool Daemon::PollSessionData() {
  uint64_t work = 0;
  for (unsigned i = 0; i < sessions_.size(); ++i) {
    verbs::SessionServer* s = sessions_[i].get();
    if (s == nullptr) continue;
    const uint64_t before = SessionWork(s->counters());
    s->PollData();
    const uint64_t after = SessionWork(s->counters());
    // Posted work must go out in this pass, not when the RNIC's last
    // reported event time comes round.
    if (after != before) ports_[i]->next_event = 0;
    work += after;
  }
  const bool moved = work != session_work_;
  session_work_ = work;
  return moved;
}

std::optional<int64_t> Daemon::QpOwnerPid(unsigned port, uint32_t qpn) const {
  if (port >= sessions_.size() || sessions_[port] == nullptr) {
    return std::nullopt;
  }
  std::optional<nic::ClientId> client = sessions_[port]->QpOwner(qpn);
  if (!client.has_value()) return std::nullopt;
  std::optional<verbs::PeerCredentials> cred =
      sessions_[port]->Credentials(*client);
  if (!cred.has_value()) return std::nullopt;
  return static_cast<int64_t>(cred->pid);
}

std::optional<MacAddr> Daemon::ResolveNeighbour(unsigned index,
                                                const IpAddr& ip) {
  Port& port = *ports_.at(index);
  rte_mbuf* m = rte_pktmbuf_alloc(port.dev->pool());
  size_t len = 0;
  std::span<uint8_t> out;
  if (m != nullptr) {
    out = {rte_pktmbuf_mtod(m, uint8_t*), rte_pktmbuf_tailroom(m)};
  }
  std::optional<MacAddr> mac =
      port.stack->Resolve(ip, clock_->Now(), out, &len);
  if (m != nullptr && len > 0) {
    m->data_len = static_cast<uint16_t>(len);
    m->pkt_len = static_cast<uint32_t>(len);
    QueueTx(port, m);
  } else if (m != nullptr) {
    rte_pktmbuf_free(m);
  }
  return mac;
}

void Daemon::Slow(nic::TimeNs now) {
  for (auto& p : ports_) {
    p->neighbours.Expire(now);
    rte_eth_stats st;
    if (rte_eth_stats_get(p->dev->port_id(), &st) == 0) {
      p->counters.rx_missed = st.imissed;
      p->counters.rx_errors = st.ierrors;
      p->counters.tx_errors = st.oerrors;
      p->counters.rx_nombuf = st.rx_nombuf;
    }
  }
}

void Daemon::Run(DaemonSignals* signals) {
  ROCEMU_LOG_INFO("running on lcore %u with %zu port(s)%s", rte_lcore_id(),
                  ports_.size(), any_endpoint() ? "" : ", no RNIC attached");
  const nic::TimeNs idle_sleep_ns =
      static_cast<nic::TimeNs>(config_.eal.idle_sleep_us) * 1000;
  const nic::TimeNs idle_spin_ns =
      static_cast<nic::TimeNs>(config_.eal.idle_spin_us) * 1000;
  if (idle_sleep_ns > 0) SetUpIdleWait();
  nic::TimeNs last_busy = clock_->Now();
  while (!signals->stop) {
    nic::TimeNs now = clock_->Now();
    // Applications post without syscalls: their rings are read every pass.
    bool busy = !sessions_.empty() && PollSessionData();
    for (unsigned i = 0; i < ports_.size(); ++i) {
      busy |= PollPort(i, now);
    }
    const nic::TimeNs next_event = RefreshNextEvents();
    ++loops_;
    if (busy) {
      last_busy = now;
      idle_backoff_ = 1;
    }
    // After idle_spin_us without work, sleep until work can exist again.
    // Never taken while frames flow, so it costs no syscall per packet.
    const bool idle = !busy && now - last_busy >= idle_spin_ns;
    if (idle_sleep_ns > 0 && idle && Sleep(now, next_event, idle_sleep_ns)) {
      last_busy = clock_->Now();  // spin again before the next sleep
      next_session_control_ = 0;  // a control fd may be what woke us
    }
    // Verbs control messages: often enough to be interactive, and every
    // pass once idle (a sleeping loop is slow anyway).
    if (!sessions_.empty() && now >= next_session_control_) {
      next_session_control_ = now + kSessionControlPeriod;
      for (auto& s : sessions_) {
        if (s != nullptr) s->PollControl();
      }
      RefreshNextEvents();  // modify_qp and friends may have made work due
    }
    if (now >= next_fast_) {
      next_fast_ = now + kFastPeriod;
      control_.Poll();
      metrics_.Poll();
      RefreshNextEvents();  // a control request may have posted work
      if (signals->reopen) {
        signals->reopen = 0;
        if (absl::Status s = Logger::Get().Reopen(); !s.ok()) {
          ROCEMU_LOG_ERROR("SIGHUP: %s", s.ToString());
        }
        for (auto& p : ports_) {
          for (PcapWriter* w : {&p->rx_capture, &p->tx_capture}) {
            if (absl::Status s = w->Reopen(); !s.ok()) {
              ROCEMU_LOG_ERROR("SIGHUP: %s", s.ToString());
            }
          }
        }
        ROCEMU_LOG_INFO("SIGHUP: logs and captures reopened");
      }
      if (now >= next_slow_) {
        next_slow_ = now + kSlowPeriod;
        Slow(now);
      }
    }
  }
  ROCEMU_LOG_INFO("shutting down");
  Shutdown();
}

void Daemon::SetUpIdleWait() {
  if (absl::Status s = idle_.Init(); !s.ok()) {
    ROCEMU_LOG_WARNING("idle sleeping off: %s", s.ToString());
    return;
  }
  idle_ready_ = true;
  for (auto& p : ports_) {
    if (!idle_.WatchRxQueue(p->dev->port_id())) {
      ROCEMU_LOG_INFO(
          "port %s: no RX interrupt; looked at every %u us while idle",
          p->config.name, config_.eal.idle_sleep_us);
    }
  }
  for (auto& s : sessions_) {
    if (s == nullptr) continue;
    for (int fd : {s->wait_fd(), s->wake_fd()}) {
      if (absl::Status st = idle_.Watch(fd); !st.ok()) {
        ROCEMU_LOG_WARNING("idle sleeping off: %s", st.ToString());
        idle_ready_ = false;
        return;
      }
    }
  }
}

bool Daemon::Sleep(nic::TimeNs now, nic::TimeNs next_event,
                   nic::TimeNs idle_sleep_ns) {
  if (!idle_ready_) return false;
  // Control sockets, metrics and statistics keep their period.
  nic::TimeNs until = std::min(next_event, next_fast_);
  // A port without RX interrupts is looked at after idle_sleep_us, and
  // less often the longer nothing arrives (up to kMaxIdleBackoff times
  // that): a quiet daemon costs little CPU, a busy one never sleeps.
  if (!idle_.ports_interrupt()) {
    until = std::min(until, now + idle_sleep_ns * idle_backoff_);
  }
  for (const auto& p : ports_) {
    // Frames held by a fault injector or waiting for TX room are due
    // sooner than any fd would say.
    if (p->tx_count > 0 || p->tx_backlog_count > p->tx_paused_count ||
        p->rx_held.count > 0 || p->tx_held.count > 0 ||
        p->rx_held.reorder != nullptr || p->tx_held.reorder != nullptr) {
      return false;
    }
  }
  if (until <= now + kMinSleep) return false;
  // Sessions first: each raises its sleeping flag and looks at its
  // doorbells once more (verbs/doorbell.h).
  size_t prepared = 0;
  bool sleep = true;
  for (; prepared < sessions_.size(); ++prepared) {
    verbs::SessionServer* s = sessions_[prepared].get();
    if (s != nullptr && !s->PrepareToSleep()) {
      sleep = false;
      break;
    }
  }
  if (sleep) {
    idle_.ArmPorts();
    // A frame that arrived before the interrupt was armed raised nothing.
    for (unsigned i = 0; i < ports_.size() && sleep; ++i) {
      sleep = !PollPort(i, now);
    }
    bool woken = false;
    if (sleep) woken = idle_.Wait(static_cast<int64_t>(until - clock_->Now()));
    idle_.DisarmPorts();
    sleep = woken;
    idle_backoff_ = woken ? 1 : std::min(idle_backoff_ * 2, kMaxIdleBackoff);
  }
  for (size_t i = 0; i < prepared; ++i) {
    if (sessions_[i] != nullptr) sessions_[i]->Awake();
  }
  return sleep;
}

void Daemon::Shutdown() {
  // Applications first: their QPs go to ERR and are destroyed, their
  // sockets are removed.
  for (auto& s : sessions_) {
    if (s == nullptr) continue;
    ROCEMU_LOG_INFO("%s: closing %s with %zu client(s)", s->device_name(),
                    s->socket_path(), s->num_clients());
    s.reset();
  }
  sessions_.clear();
  // QPs go to ERR first: every outstanding work request completes with
  // WR_FLUSH_ERR, and nothing more is sent while the ports stop.
  for (size_t i = 0; i < rnics_.size(); ++i) {
    size_t n = rnics_[i]->FlushAll();
    if (n > 0) ROCEMU_LOG_INFO("port %u: %zu QP(s) flushed", i, n);
    if (i < ports_.size()) ports_[i]->endpoint = nullptr;
  }
  control_.Close();
  metrics_.Close();
  for (auto& p : ports_) {
    // Stop sending first: a memif peer crashes if it goes mid-traffic.
    for (uint16_t i = 0; i < p->tx_count; ++i) rte_pktmbuf_free(p->tx_batch[i]);
    p->tx_count = 0;
    for (uint16_t i = 0; i < p->tx_backlog_count; ++i) {
      rte_pktmbuf_free(p->tx_backlog[i]);
    }
    p->tx_backlog_count = 0;
    p->tx_paused_count = 0;
    for (FaultState* h : {&p->rx_held, &p->tx_held}) {
      while (h->count > 0) {
        rte_pktmbuf_free(h->ring[h->head].m);
        h->head = (h->head + 1) % FaultState::kCapacity;
        --h->count;
      }
      if (h->reorder != nullptr) rte_pktmbuf_free(h->reorder);
      h->reorder = nullptr;
    }
    if (p->spare != nullptr) rte_pktmbuf_free(p->spare);
    p->spare = nullptr;
    p->rx_capture.Close();
    p->tx_capture.Close();
  }
  ports_.clear();  // stops the ports, then frees their pools
  if (eal_ready_) {
    // With --no-shconf the EAL still creates its runtime directory and
    // leaves it behind; remove it when empty so weeks of restarts and test
    // runs do not pile them up.
    std::string runtime_dir = rte_eal_get_runtime_dir();
    rte_eal_cleanup();
    eal_ready_ = false;
    rmdir(runtime_dir.c_str());
  }
}

std::string Daemon::CountersJson() const {
  std::string out = absl::StrFormat(
      "{\"uptime_ns\":%d,\"rnic_attached\":%s,\"capture\":%s",
      clock_ ? clock_->Now() : 0, any_endpoint() ? "true" : "false",
      capture_on_ ? "true" : "false");
  absl::StrAppend(&out, ",\"loops\":", loops_);
  ForEachIdleCounter(idle_.counters(), [&](const char* name, uint64_t v) {
    absl::StrAppend(&out, ",\"", name, "\":", v);
  });
  absl::StrAppend(&out, ",\"ports\":{");
  bool first_port = true;
  for (const auto& p : ports_) {
    absl::StrAppend(&out, first_port ? "" : ",", "\"",
                    JsonEscape(p->config.name), "\":{\"mac\":\"",
                    config::FormatMac(p->dev->mac()), "\"");
    first_port = false;
    ForEachCounter(p->counters, p->stack->counters(), p->rx_faults->counters(),
                   p->tx_faults->counters(), [&](const char* name, uint64_t v) {
                     absl::StrAppend(&out, ",\"", name, "\":", v);
                   });
    absl::StrAppend(&out, ",\"neighbours\":", p->neighbours.size());
    const size_t index = static_cast<size_t>(&p - ports_.data());
    if (index < rnics_.size()) {
      absl::StrAppend(&out, ",\"rnic\":");
      rnics_[index]->AppendCountersJson(&out);
      absl::StrAppend(&out, ",\"pfc\":");
      rnics_[index]->AppendPfcJson(clock_->Now(), &out);
      absl::StrAppend(&out, ",\"dcqcn\":");
      rnics_[index]->AppendDcqcnJson(&out);
    }
    if (p->ingress != nullptr) {
      absl::StrAppend(&out, ",\"congestion_point\":");
      p->ingress->AppendJson(&out);
    }
    absl::StrAppend(&out, ",\"verbs\":");
    if (index < sessions_.size() && sessions_[index] != nullptr) {
      sessions_[index]->AppendStateJson(&out);
    } else {
      absl::StrAppend(&out, "null");
    }
    absl::StrAppend(&out, "}");
  }
  absl::StrAppend(&out, "}}");
  return out;
}

// The views below are lists with one entry per port, each naming the port
// and its device, so rocemu-ctl can print them as tables.
namespace {

template <typename F>
std::string PerPort(const char* key, size_t n, F f) {
  std::string out = absl::StrCat("{\"", key, "\":[");
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) out += ',';
    f(i, &out);
  }
  absl::StrAppend(&out, "]}");
  return out;
}

}  // namespace

std::string Daemon::DevicesJson() const {
  return PerPort("devices", rnics_.size(), [&](size_t i, std::string* out) {
    const Port& p = *ports_[i];
    const bool verbs = i < sessions_.size() && sessions_[i] != nullptr;
    absl::StrAppend(out, "{\"device\":\"rocemu_", JsonEscape(p.config.name),
                    "\",\"port\":\"", JsonEscape(p.config.name),
                    "\",\"devargs\":\"", JsonEscape(p.config.devargs),
                    "\",\"verbs_socket\":");
    if (verbs) {
      absl::StrAppend(out, "\"", JsonEscape(sessions_[i]->socket_path()),
                      "\",\"clients\":", sessions_[i]->num_clients());
    } else {
      absl::StrAppend(out, "null,\"clients\":0");
    }
    absl::StrAppend(out, ",\"attr\":");
    rnics_[i]->AppendDeviceJson(out);
    absl::StrAppend(out, "}");
  });
}

std::string Daemon::PortsJson() const {
  return PerPort("ports", ports_.size(), [&](size_t i, std::string* out) {
    const Port& p = *ports_[i];
    absl::StrAppend(out, "{\"port\":\"", JsonEscape(p.config.name),
                    "\",\"device\":\"rocemu_", JsonEscape(p.config.name),
                    "\",\"mac\":\"", config::FormatMac(p.dev->mac()),
                    "\",\"link_mtu\":", p.config.mtu, ",\"addresses\":[");
    for (size_t a = 0; a < p.config.addresses.size(); ++a) {
      const config::IpPrefix& pre = p.config.addresses[a];
      absl::StrAppend(out, a == 0 ? "" : ",", "\"",
                      config::FormatIp(pre.addr, pre.ipv6), "/", pre.prefix_len,
                      "\"");
    }
    absl::StrAppend(out, "],\"neighbours\":", p.neighbours.size(),
                    ",\"rx_packets\":", p.counters.rx_packets,
                    ",\"tx_packets\":", p.counters.tx_packets, ",\"attr\":");
    if (i < rnics_.size()) {
      rnics_[i]->AppendPortJson(out);
    } else {
      absl::StrAppend(out, "null");
    }
    absl::StrAppend(out, "}");
  });
}

std::string Daemon::QpsJson() const {
  return PerPort("ports", rnics_.size(), [&](size_t i, std::string* out) {
    absl::StrAppend(out, "{\"port\":\"", JsonEscape(ports_[i]->config.name),
                    "\",\"device\":\"rocemu_",
                    JsonEscape(ports_[i]->config.name), "\",\"qps\":");
    const unsigned port = static_cast<unsigned>(i);
    rnics_[i]->AppendQpsJson(
        [this, port](uint32_t qpn) { return QpOwnerPid(port, qpn); }, out);
    absl::StrAppend(out, "}");
  });
}

std::string Daemon::CmJson() const {
  return PerPort("ports", rnics_.size(), [&](size_t i, std::string* out) {
    absl::StrAppend(out, "{\"port\":\"", JsonEscape(ports_[i]->config.name),
                    "\",\"device\":\"rocemu_",
                    JsonEscape(ports_[i]->config.name), "\",\"cm_ids\":");
    const unsigned port = static_cast<unsigned>(i);
    rnics_[i]->AppendCmJson(
        [this, port](uint32_t client) -> std::optional<int64_t> {
          if (port >= sessions_.size() || sessions_[port] == nullptr) {
            return std::nullopt;
          }
          std::optional<verbs::PeerCredentials> cred =
              sessions_[port]->Credentials(client);
          if (!cred.has_value()) return std::nullopt;
          return static_cast<int64_t>(cred->pid);
        },
        out);
    absl::StrAppend(out, "}");
  });
}

std::string Daemon::SessionsJson() const {
  return PerPort("ports", ports_.size(), [&](size_t i, std::string* out) {
    absl::StrAppend(out, "{\"port\":\"", JsonEscape(ports_[i]->config.name),
                    "\",\"verbs\":");
    if (i < sessions_.size() && sessions_[i] != nullptr) {
      sessions_[i]->AppendStateJson(out);
    } else {
      absl::StrAppend(out, "null");
    }
    absl::StrAppend(out, "}");
  });
}

std::string Daemon::PfcJson() const {
  return PerPort("ports", rnics_.size(), [&](size_t i, std::string* out) {
    absl::StrAppend(out, "{\"port\":\"", JsonEscape(ports_[i]->config.name),
                    "\",\"pfc\":");
    rnics_[i]->AppendPfcJson(clock_->Now(), out);
    absl::StrAppend(out, "}");
  });
}

std::string Daemon::DcqcnJson() const {
  return PerPort("ports", rnics_.size(), [&](size_t i, std::string* out) {
    absl::StrAppend(out, "{\"port\":\"", JsonEscape(ports_[i]->config.name),
                    "\",\"dcqcn\":");
    rnics_[i]->AppendDcqcnJson(out);
    absl::StrAppend(out, "}");
  });
}

std::string Daemon::PrometheusText() const {
  std::string out;
  absl::StrAppend(&out, "rocemu_loops ", loops_, "\n");
  ForEachIdleCounter(idle_.counters(), [&](const char* name, uint64_t v) {
    absl::StrAppend(&out, "rocemu_", name, " ", v, "\n");
  });
  for (const auto& p : ports_) {
    ForEachCounter(p->counters, p->stack->counters(), p->rx_faults->counters(),
                   p->tx_faults->counters(), [&](const char* name, uint64_t v) {
                     absl::StrAppend(&out, "rocemu_port_", name, "{port=\"",
                                     p->config.name, "\"} ", v, "\n");
                   });
    const size_t index = static_cast<size_t>(&p - ports_.data());
    if (index < rnics_.size()) {
      rnics_[index]->AppendPrometheus(p->config.name, &out);
      rnics_[index]->AppendCongestionPrometheus(p->config.name, clock_->Now(),
                                                &out);
    }
    if (index < sessions_.size() && sessions_[index] != nullptr) {
      const verbs::SessionCounters& c = sessions_[index]->counters();
      auto emit = [&](const char* name, uint64_t v) {
        absl::StrAppend(&out, "rocemu_verbs_", name, "{port=\"", p->config.name,
                        "\"} ", v, "\n");
      };
      emit("clients", sessions_[index]->num_clients());
      verbs::ForEachSessionCounter(c, emit);
    }
  }
  return out;
}

std::string Daemon::HandleControl(std::string_view request) {
  std::string cmd = JsonStringField(request, "cmd");
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
  if (hooks_ != nullptr && TestHooks::Handles(cmd)) {
    return hooks_->Handle(cmd, request);
  }
  if (cmd == "ping") return "{\"ok\":true}";
  if (cmd == "resolve") {
    // Drives the resolver by hand: the first call for an unknown address
    // sends an ARP request / neighbour solicitation, later calls report.
    std::string port_name = JsonStringField(request, "port");
    std::string ip_text = JsonStringField(request, "ip");
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
        return "{\"error\":\"resolve needs \\\"ip\\\": an IPv4 or IPv6 "
               "address\"}";
      }
      std::optional<MacAddr> mac = ResolveNeighbour(i, ip);
      if (!mac.has_value()) return "{\"ok\":true,\"mac\":null}";
      return absl::StrCat("{\"ok\":true,\"mac\":\"", config::FormatMac(*mac),
                          "\"}");
    }
    return absl::StrCat("{\"error\":\"no port '", JsonEscape(port_name),
                        "'\"}");
  }
  if (cmd == "capture") {
    bool enable = false;
    if (!JsonBoolField(request, "enable", &enable)) {
      return "{\"error\":\"capture needs \\\"enable\\\": true|false\"}";
    }
    absl::Status s = SetCapture(enable);
    if (!s.ok()) {
      return absl::StrCat("{\"error\":\"", JsonEscape(s.ToString()), "\"}");
    }
    return absl::StrCat(
        "{\"ok\":true,\"capture\":", capture_on_ ? "true" : "false", "}");
  }
  return absl::StrCat("{\"error\":\"unknown command '", JsonEscape(cmd),
                      "' (counters, devices, ports, qps, clients, mrs, pfc, "
                      "dcqcn, capture, resolve, ping",
                      hooks_ != nullptr ? ", test hooks" : "", ")\"}");
}

}  // namespace rocemu::emulator
