#include "emulator/daemon.h"

#include <arpa/inet.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <iterator>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "emulator/capture/mbuf_tag.h"
#include "emulator/control/socket_path.h"
#include "emulator/logging.h"
#include "emulator/port/eal_args.h"
#include "emulator/port/hugepages.h"
#include "emulator/port/intr_thread.h"
#include "nic/cm/cm_agent.h"
#include "protocol/pfc.h"

namespace rocemu::emulator {
namespace {

constexpr nic::TimeNs kFastPeriod = 1'000'000;      // control sockets
constexpr nic::TimeNs kSlowPeriod = 1'000'000'000;  // stats, neighbours
// How long a memif client's link is down before it asks its server again.
constexpr nic::TimeNs kMemifRejoinPeriod = 500'000'000;
// Shorter waits are not worth two epoll syscalls and the wake-up latency.
constexpr nic::TimeNs kMinSleep = 20'000;
constexpr uint32_t kMaxIdleBackoff = 16;

uint64_t WallNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 +
         static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

Daemon::Daemon(config::Config config) : config_(std::move(config)) {}

Daemon::~Daemon() { Shutdown(); }

absl::Status Daemon::Init() {
  if (absl::Status s = OpenNetdevs(); !s.ok()) return s;
  // The lock is held until the EAL has taken its pages.
  std::optional<HugepageLock> lock;
  absl::StatusOr<HugepageChoice> huge = ChooseHostHugepages(config_.eal, &lock);
  if (!huge.ok()) return huge.status();
  if (!huge->use) lock.reset();  // takes no pages: no need to make others wait
  ROCEMU_LOG_INFO("%s", huge->why);
  std::vector<std::string> args = BuildEalArgs(config_, getpid(), huge->use);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  ROCEMU_LOG_INFO("EAL: %s", absl::StrJoin(args, " "));
  if (rte_eal_init(static_cast<int>(argv.size()), argv.data()) < 0) {
    return absl::UnavailableError(
        absl::StrCat("DPDK EAL init failed: ", rte_strerror(rte_errno)));
  }
  lock.reset();
  eal_ready_ = true;
  if (!RegisterMbufTag()) {
    return absl::InternalError(absl::StrCat(
        "cannot register the mbuf capture tag: ", rte_strerror(rte_errno)));
  }
  clock_ = std::make_unique<TscClock>();
  wall_base_ns_ = WallNs();
  int socket_id = static_cast<int>(rte_socket_id());

  for (unsigned i = 0; i < config_.ports.size(); ++i) {
    auto port = std::make_unique<Port>();
    port->index = static_cast<uint16_t>(ports_.size());
    port->config = config_.ports[i];
    absl::StatusOr<DpdkPort> dev =
        DpdkPort::Open(port->config, i, socket_id, PortOptions(i));
    if (!dev.ok()) return dev.status();
    port->dev.emplace(std::move(*dev));
    NeighbourCache::Options nopts;
    nopts.reachable_ns =
        static_cast<nic::TimeNs>(port->config.neighbour_timeout_s) *
        1'000'000'000;
    port->neighbours.set_options(nopts);
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
    if (absl::Status s = AttachNetdev(*port); !s.ok()) return s;
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

bool Daemon::any_endpoint() const {
  for (const auto& p : ports_) {
    if (p->endpoint != nullptr) return true;
  }
  return false;
}

absl::Status Daemon::AttachRnics() {
  std::vector<RnicPort*> raw;
  std::vector<std::string> names;
  const uint32_t shards = config_.eal.lcores;
  for (unsigned i = 0; i < ports_.size(); ++i) {
    absl::StatusOr<std::unique_ptr<RnicPort>> r = RnicPort::Create(
        config_, i, ports_[i]->dev->mac(),
        [this, i](const IpAddr& ip) { return ResolveNeighbour(i, ip); }, 0,
        shards);
    if (!r.ok()) return r.status();
    if (shards > 1) {
      ports_[i]->cm_services = std::make_unique<PortCmServices>();
      (*r)->rnic().cm().set_service_registry(ports_[i]->cm_services.get());
    }
    raw.push_back(r->get());
    names.push_back(ports_[i]->config.name);
    rnics_.push_back(std::move(*r));
    AttachEndpoint(i, &rnics_.back()->rnic());
    if (ports_[i]->netdev != nullptr) {
      ApplyAddresses(*ports_[i]);
      UpdateLink(*ports_[i]);
    }
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
  // One account per daemon: a user's caps and a process's pinned pages
  // span every port and shard.
  const config::VerbsLimitsConfig& lim = config_.verbs.limits;
  auto limits = std::make_shared<verbs::ResourceLimits>(
      verbs::ResourceUse{.pds = lim.per_uid.max_pds,
                         .cqs = lim.per_uid.max_cqs,
                         .qps = lim.per_uid.max_qps,
                         .mrs = lim.per_uid.max_mrs,
                         .queue_bytes = lim.per_uid.max_queue_bytes},
      lim.memlock);
  for (unsigned i = 0; i < ports_.size() && i < rnics_.size(); ++i) {
    const std::string path = config_.VerbsSocketPath(i);
    if (path.empty()) continue;
    if (absl::Status s = ClaimSocketPath(path, SOCK_SEQPACKET); !s.ok()) {
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
    o.limits = limits;
    o.device_name = "rocemu_" + ports_[i]->config.name;
    // GIDs are IPv4-mapped or IPv6 addresses, the form the neighbour cache
    // keys on: a destination GID is its own next-hop IP on the link.
    o.resolve_dmac =
        [this, i](const nic::Gid& gid) -> std::optional<protocol::MacAddr> {
      return ResolveNeighbour(i, gid);
    };
    if (config_.eal.lcores > 1) {
      o.route_client = [this, i](int fd, const verbs::PeerCredentials& peer) {
        return RouteClient(i, fd, peer);
      };
    }
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
  return config_.eal.lcores > 1 ? StartShards() : absl::OkStatus();
}

absl::Status Daemon::StartShards() {
  main_wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (main_wake_fd_ < 0) return absl::ErrnoToStatus(errno, "eventfd");
  const uint32_t shards = config_.eal.lcores;
  for (unsigned i = 0; i < ports_.size() && i < rnics_.size(); ++i) {
    Port& port = *ports_[i];
    for (uint32_t k = 1; k < shards; ++k) {
      absl::StatusOr<std::unique_ptr<RnicPort>> r = RnicPort::Create(
          config_, i, port.dev->mac(),
          [this, i](const IpAddr& ip) { return ResolveFromShard(i, ip); }, k,
          shards);
      if (!r.ok()) return r.status();
      (*r)->rnic().cm().set_service_registry(port.cm_services.get());
      std::unique_ptr<verbs::SessionServer> session;
      if (i < sessions_.size() && sessions_[i] != nullptr) {
        // Shard 0's settings: same device, socket and limits.
        verbs::SessionServerOptions o = sessions_[i]->options();
        o.listen = false;  // shard 0 accepts, RouteClient hands over
        o.route_client = nullptr;
        o.resolve_dmac =
            [this, i](const nic::Gid& gid) -> std::optional<protocol::MacAddr> {
          return ResolveFromShard(i, gid);
        };
        absl::StatusOr<std::unique_ptr<verbs::SessionServer>> server =
            verbs::SessionServer::Create((*r)->rnic(), o);
        if (!server.ok()) return server.status();
        session = std::move(*server);
      }
      Shard::Options so;
      so.index = k;
      so.port = static_cast<uint16_t>(i);
      so.pool = port.dev->pool();
      so.max_frame = port.dev->max_frame();
      so.clock = clock_.get();
      so.idle_sleep_us = config_.eal.idle_sleep_us;
      so.idle_spin_us = config_.eal.idle_spin_us;
      so.idle_yield = config_.eal.idle_yield;
      so.main_sleeping = &main_sleeping_;
      so.main_wake_fd = main_wake_fd_;
      so.stop = &workers_stop_;
      absl::StatusOr<std::unique_ptr<Shard>> shard =
          Shard::Create(so, std::move(*r), std::move(session));
      if (!shard.ok()) return shard.status();
      port.shards.push_back(std::move(*shard));
    }
    ROCEMU_LOG_INFO("port %s: %u RNIC shards, applications placed by process",
                    port.config.name, shards);
  }
  return absl::OkStatus();
}

bool Daemon::RouteClient(unsigned index, int fd,
                         const verbs::PeerCredentials& peer) {
  Port& port = *ports_.at(index);
  uint32_t shard;
  if (auto it = port.pid_shard.find(peer.pid); it != port.pid_shard.end()) {
    shard = it->second;
  } else {
    // The shard with the fewest live processes; on a tie the first, so
    // that one application per daemon runs as with one lcore (its engines
    // beside the port's I/O: on two shared cores, moving them to another
    // lcore cost 64 B WRITEs 4x, scripts/bench_lcores.sh).
    ForgetDeadProcesses(port);
    std::vector<uint32_t> load(port.shards.size() + 1, 0);
    for (const auto& [pid, k] : port.pid_shard) ++load[k];
    shard = 0;
    for (uint32_t k = 1; k < load.size(); ++k) {
      if (load[k] < load[shard]) shard = k;
    }
    port.pid_shard[peer.pid] = shard;
  }
  if (shard == 0) return false;
  port.shards[shard - 1]->Adopt(fd, peer);
  return true;
}

void Daemon::ForgetDeadProcesses(Port& port) {
  absl::erase_if(port.pid_shard, [](const auto& e) {
    return kill(e.first, 0) != 0 && errno == ESRCH;
  });
}

std::optional<MacAddr> Daemon::ResolveFromShard(unsigned index,
                                                const IpAddr& ip) {
  Port& port = *ports_.at(index);
  if (std::optional<MacAddr> mac = port.stack->Lookup(ip, clock_->Now())) {
    return mac;
  }
  std::lock_guard<std::mutex> lock(port.resolve_mu);
  if (port.resolve_requests.size() < 256) port.resolve_requests.push_back(ip);
  return std::nullopt;
}

void Daemon::SolicitForShards() {
  for (unsigned i = 0; i < ports_.size(); ++i) {
    Port& port = *ports_[i];
    if (port.shards.empty()) continue;
    std::vector<IpAddr> asked;
    {
      std::lock_guard<std::mutex> lock(port.resolve_mu);
      asked.swap(port.resolve_requests);
    }
    std::sort(asked.begin(), asked.end());
    asked.erase(std::unique(asked.begin(), asked.end()), asked.end());
    for (const IpAddr& ip : asked) (void)ResolveNeighbour(i, ip);
  }
}

Daemon::PausedShards::PausedShards(const Daemon& d) : d_(d) {
  if (!d_.workers_running_) return;
  for (const auto& p : d_.ports_) {
    for (const auto& s : p->shards) s->Pause();
  }
}

Daemon::PausedShards::~PausedShards() {
  if (!d_.workers_running_) return;
  for (const auto& p : d_.ports_) {
    for (const auto& s : p->shards) s->Resume();
  }
}

int Daemon::WorkerMain(void* arg) {
  static_cast<Shard*>(arg)->Run();
  return 0;
}

void Daemon::LaunchWorkers() {
  if (ports_.empty() || ports_[0]->shards.empty()) return;
  auto& shards = ports_[0]->shards;
  size_t next = 0;
  unsigned lcore;
  RTE_LCORE_FOREACH_WORKER(lcore) {
    if (next == shards.size()) break;
    shards[next]->BeforeLaunch();
    if (rte_eal_remote_launch(&Daemon::WorkerMain, shards[next].get(), lcore) !=
        0) {
      ROCEMU_LOG_ERROR("shard %u: cannot launch on lcore %u",
                       shards[next]->index(), lcore);
      break;
    }
    ++next;
  }
  workers_running_ = next > 0;
  if (next < shards.size()) {
    ROCEMU_LOG_ERROR(
        "%zu of %zu shards have no lcore: their applications "
        "get no service",
        shards.size() - next, shards.size());
  }
}

void Daemon::StopWorkers() {
  if (!workers_running_) return;
  workers_stop_.store(true, std::memory_order_release);
  for (auto& p : ports_) {
    for (auto& s : p->shards) s->Wake();
  }
  rte_eal_mp_wait_lcore();
  for (auto& p : ports_) {
    for (auto& s : p->shards) s->AfterWait();
  }
  workers_running_ = false;
}

void Daemon::PollSessionPosts() {
  for (unsigned i = 0; i < sessions_.size(); ++i) {
    verbs::SessionServer* s = sessions_[i].get();
    if (s == nullptr) continue;
    const uint64_t before = SessionWork(s->counters());
    s->PollPosts();
    // Posted work must go out in this pass, not when the RNIC's last
    // reported event time comes round.
    if (SessionWork(s->counters()) != before) ports_[i]->next_event = 0;
  }
}

bool Daemon::PollSessionCompletions() {
  uint64_t work = 0;
  for (const auto& s : sessions_) {
    if (s == nullptr) continue;
    s->PollCompletions();
    work += SessionWork(s->counters());
  }
  const bool moved = work != session_work_;
  session_work_ = work;
  return moved;
}

std::optional<MacAddr> Daemon::ResolveNeighbour(unsigned index,
                                                const IpAddr& ip) {
  Port& port = *ports_.at(index);
  if (port.netdev != nullptr) return ResolveFromKernel(port, ip);
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
  // The other shards' error notes, with the shards paused (once a second:
  // their logs and dumps come up to a second late).
  if (std::any_of(ports_.begin(), ports_.end(),
                  [](const auto& p) { return !p->shards.empty(); })) {
    PausedShards paused(*this);
    ReportErrors(now, /*shards=*/true);
  }
  for (auto& p : ports_) {
    p->neighbours.Expire(now);
    if (!p->dev->memif()) UpdateLink(*p);
    // A new process with a recycled pid is placed afresh.
    ForgetDeadProcesses(*p);
    rte_eth_stats st;
    if (rte_eth_stats_get(p->dev->port_id(), &st) == 0) {
      p->counters.rx_missed = st.imissed;
      p->counters.rx_errors = st.ierrors;
      p->counters.tx_errors = st.oerrors;
      p->counters.rx_nombuf = st.rx_nombuf;
    }
    const uint64_t faults = p->dev->memif_faults();
    if (faults != p->counters.memif_faults) {
      ROCEMU_LOG_WARNING(
          "port %s: %" PRIu64
          " queue burst(s) caught by net_memif's teardown of a departing "
          "peer; contained (emulator/port/memif_guard.h)",
          p->config.name.c_str(), faults - p->counters.memif_faults);
      p->counters.memif_faults = faults;
    }
  }
}

bool Daemon::UpdateLink(Port& port) {
  const bool up =
      port.netdev != nullptr ? NetdevLinkUp(port) : port.dev->LinkUp();
  if (up) port.link_seen_up = true;
  if (!port.link_seen_up || up == port.link_up) return up;
  port.link_up = up;
  ROCEMU_LOG_INFO("port %s: link %s", port.config.name, up ? "up" : "down");
  if (port.index < rnics_.size() && rnics_[port.index] != nullptr) {
    rnics_[port.index]->rnic().SetLinkUp(up);
    endpoints_touched_ = true;
  }
  for (auto& s : port.shards) s->SetLinkUp(up);
  return up;
}

void Daemon::Run(DaemonSignals* signals) {
  ROCEMU_LOG_INFO("running on lcore %u with %zu port(s)%s", rte_lcore_id(),
                  ports_.size(), any_endpoint() ? "" : ", no RNIC attached");
  if (idle_sleep_ns() > 0) SetUpIdleWait();
  LaunchWorkers();
  nic::TimeNs last_busy = clock_->Now();
  while (!signals->stop) {
    const nic::TimeNs now = clock_->Now();
    if (Pass(now, signals)) {
      last_busy = now;
    } else {
      Idle(now, &last_busy);
    }
  }
  ROCEMU_LOG_INFO("shutting down");
  Shutdown();
}

void Daemon::Idle(nic::TimeNs now, nic::TimeNs* last_busy) {
  const nic::TimeNs idle_spin_ns =
      static_cast<nic::TimeNs>(config_.eal.idle_spin_us) * 1000;
  // After idle_spin_us without work, sleep until work can exist again.
  // Never taken while frames flow, so it costs no syscall per packet.
  if (idle_sleep_ns() > 0 && now - *last_busy >= idle_spin_ns &&
      !session_control_.Hot(now) && Sleep(now, next_event_, idle_sleep_ns())) {
    *last_busy = clock_->Now();  // spin again before the next sleep
    session_control_.Woken();    // a control fd may be what woke us
  } else if (config_.eal.idle_yield) {
    idle_.Yield();
  }
}

bool Daemon::Pass(DaemonSignals* signals) {
  return Pass(clock_->Now(), signals);
}

bool Daemon::Pass(nic::TimeNs now, DaemonSignals* signals) {
  // Applications post without syscalls: their rings are read every pass,
  // posts before the ports and completions after them.
  if (!sessions_.empty()) PollSessionPosts();
  bool busy = false;
  for (unsigned i = 0; i < ports_.size(); ++i) {
    busy |= PollPort(i, now);
  }
  busy |= !sessions_.empty() && PollSessionCompletions();
  if (endpoints_touched_) {
    next_event_ = RefreshNextEvents();
    endpoints_touched_ = false;
  }
  ++loops_;
  if (busy) idle_backoff_ = 1;
  // Verbs control messages: see control_cadence.h.
  if (!sessions_.empty() && session_control_.Due(now)) {
    size_t served = 0;
    for (auto& s : sessions_) {
      if (s != nullptr) served += s->PollControl();
    }
    session_control_.Looked(now, served > 0);
    busy |= served > 0;                 // as in Shard::Pass
    next_event_ = RefreshNextEvents();  // modify_qp may have made work due
  }
  if (now >= next_fast_) {
    next_fast_ = now + kFastPeriod;
    control_.Poll();
    metrics_.Poll();
    PollNetdevs();
    ReportErrors(now);
    FlushCaptures(now);
    for (auto& p : ports_) {
      p->dev->FaultInSharedMemory();
      if (!p->dev->memif()) continue;
      const bool up = UpdateLink(*p);  // shared state: no syscall
      if (p->dev->memif_client()) {
        // Down for a whole period, so that a connection still being set
        // up (the PMD's control thread, on a busy core) is not cut short.
        if (p->memif_rejoin_at == 0 || up) {
          p->memif_rejoin_at = now + kMemifRejoinPeriod;
        } else if (now >= p->memif_rejoin_at) {
          p->dev->RejoinMemifServer();
          p->memif_rejoin_at = now + kMemifRejoinPeriod;
        }
      }
    }
    for (unsigned i = 0; i < rnics_.size(); ++i) ReportGroups(i, now);
    next_event_ = RefreshNextEvents();  // a control request may post work
    if (signals != nullptr && signals->reopen) {
      signals->reopen = 0;
      Reopen();
    }
    if (now >= next_slow_) {
      next_slow_ = now + kSlowPeriod;
      Slow(now);
    }
    SolicitForShards();
    // Slow() and the shards' requests may have changed an endpoint's
    // state after the refresh above.
    endpoints_touched_ = true;
  }
  return busy;
}

void Daemon::Reopen() {
  if (absl::Status s = Logger::Get().Reopen(); !s.ok()) {
    ROCEMU_LOG_ERROR("SIGHUP: %s", s.ToString());
  }
  for (auto& p : ports_) {
    for (CaptureWriter* w : {&p->rx_capture, &p->tx_capture}) {
      if (absl::Status s = w->Reopen(); !s.ok()) {
        ROCEMU_LOG_ERROR("SIGHUP: %s", s.ToString());
      }
    }
  }
  ROCEMU_LOG_INFO("SIGHUP: logs and captures reopened");
}

void Daemon::SetUpIdleWait() {
  if (absl::Status s = idle_.Init(); !s.ok()) {
    ROCEMU_LOG_WARNING("idle sleeping off: %s", s.ToString());
    return;
  }
  idle_ready_ = true;
  for (auto& p : ports_) {
    if (p->dev->memif()) {
      idle_.WatchMemif(&*p->dev);
      continue;
    }
    if (!idle_.WatchRxQueue(p->dev->port_id())) {
      ROCEMU_LOG_INFO(
          "port %s: no RX interrupt; looked at every %u us while idle",
          p->config.name, config_.eal.idle_sleep_us);
    }
  }
  if (main_wake_fd_ >= 0) {
    if (absl::Status st = idle_.Watch(main_wake_fd_); !st.ok()) {
      ROCEMU_LOG_WARNING("idle sleeping off: %s", st.ToString());
      idle_ready_ = false;
      return;
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
  // The shards' lcores wake us when they queue frames (Shard::WakeMain)
  // from here on; frames already queued are work now.
  main_sleeping_.store(true, std::memory_order_seq_cst);
  for (const auto& p : ports_) {
    for (const auto& sh : p->shards) {
      if (sh->HasTx()) {
        main_sleeping_.store(false, std::memory_order_relaxed);
        return false;
      }
    }
  }
  // Sessions first: each raises its sleeping flag and looks at its
  // doorbells once more (verbs/wire/doorbell.h).
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
  main_sleeping_.store(false, std::memory_order_seq_cst);
  if (main_wake_fd_ >= 0) {
    uint64_t v;
    (void)!read(main_wake_fd_, &v, sizeof(v));
  }
  return sleep;
}

void Daemon::Shutdown() {
  // The shards' lcores stop first; then their applications go as the
  // first shard's do, below.
  StopWorkers();
  for (auto& p : ports_) p->shards.clear();
  if (main_wake_fd_ >= 0) {
    close(main_wake_fd_);
    main_wake_fd_ = -1;
  }
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
    p->tx_stash.Release();
    p->rx_capture.Close();
    p->tx_capture.Close();
  }
  if (leave_dpdk_to_exit_) {
    // Never destroyed, but still referenced: a leak checker at exit sees
    // memory kept on purpose, not memory lost.
    static auto* const left_to_exit = new std::vector<std::unique_ptr<Port>>;
    for (auto& p : ports_) left_to_exit->push_back(std::move(p));
  }
  ports_.clear();  // stops the ports, then frees their pools
  if (eal_ready_ && !leave_dpdk_to_exit_) {
    // With --no-shconf the EAL still creates its runtime directory and
    // leaves it behind; remove it when empty so weeks of restarts and test
    // runs do not pile them up.
    std::string runtime_dir = rte_eal_get_runtime_dir();
    ParkInterruptThread();  // cleanup frees what it would touch
    rte_eal_cleanup();
    eal_ready_ = false;
    rmdir(runtime_dir.c_str());
  }
}

}  // namespace rocemu::emulator
