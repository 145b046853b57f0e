#include "emulator/port/dpdk_port.h"

#include <rte_errno.h>
#include <sys/mman.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "emulator/logging.h"
#include "emulator/port/eal_args.h"
#include "emulator/port/intr_thread.h"
#include "emulator/port/quiet_dpdk_log.h"
#include "emulator/port/self_mappings.h"

namespace rocemu::emulator {
namespace {

constexpr unsigned kPoolSize = 8191;  // 2^n - 1 suits rte_mempool best
constexpr unsigned kPoolCache = 256;

absl::Status PortError(const config::PortConfig& c, std::string_view what,
                       int rc) {
  return absl::UnavailableError(absl::StrCat("port ", c.name, " (", c.devargs,
                                             "): ", std::string(what), ": ",
                                             rte_strerror(rc < 0 ? -rc : rc)));
}

// Faults in every page of the shared mappings whose name has `tag`
// (MADV_POPULATE_WRITE keeps their contents). Returns the bytes covered.
size_t FaultInMappings(std::string_view tag) {
  size_t covered = 0;
  ForEachSelfMapping(tag, [&](uintptr_t begin, uintptr_t end) {
    if (madvise(reinterpret_cast<void*>(begin), end - begin,
                MADV_POPULATE_WRITE) == 0) {
      covered += end - begin;
    }
  });
  return covered;
}

}  // namespace

absl::StatusOr<DpdkPort> DpdkPort::Open(const config::PortConfig& c,
                                        unsigned index, int socket_id,
                                        const Options& options) {
  DpdkPort port;
  std::string name = DeviceName(c.devargs);
  if (rte_eth_dev_get_port_by_name(name.c_str(), &port.port_id_) != 0) {
    return absl::NotFoundError(absl::StrCat(
        "port ", c.name, ": device '", c.devargs,
        "' did not probe (no such interface, socket or permission? see the "
        "DPDK log above)"));
  }
  rte_eth_dev_info info;
  if (int rc = rte_eth_dev_info_get(port.port_id_, &info); rc != 0) {
    return PortError(c, "dev_info_get", rc);
  }

  // The PMD may cap its MTU below the configured one (net_tap and
  // af_packet report 1500): the kernel side then carries larger frames for
  // af_packet, so the DPDK MTU is capped rather than refused.
  // The same overhead rte_eth_dev_configure assumes when it checks the MTU
  // against max_rx_pktlen.
  uint32_t overhead = RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN;
  if (info.max_mtu != UINT16_MAX && info.max_rx_pktlen > info.max_mtu) {
    overhead = info.max_rx_pktlen - info.max_mtu;
  }
  uint32_t max_mtu =
      std::min<uint32_t>(info.max_mtu, info.max_rx_pktlen - overhead);
  port.dpdk_mtu_ = std::min<uint32_t>(c.mtu, max_mtu);
  if (port.dpdk_mtu_ < c.mtu) {
    ROCEMU_LOG_WARNING(
        "port %s: %s allows MTU %u; configured %u is used for frame sizes only",
        c.name, info.driver_name, max_mtu, c.mtu);
  }
  port.max_frame_ =
      std::max(c.mtu, options.max_mtu) + RTE_ETHER_HDR_LEN + 4 /* VLAN */;
  // Room for a whole frame per mbuf: RX is never chained, TX buffers are
  // lent to the RNIC as one contiguous span.
  uint32_t room = std::max<uint32_t>(RTE_MBUF_DEFAULT_DATAROOM,
                                     (port.max_frame_ + 1023) & ~1023u);
  // af_packet copies a whole ring frame (framesz) into one mbuf.
  if (size_t at = c.devargs.find("framesz="); at != std::string::npos) {
    room = std::max<uint32_t>(
        room,
        static_cast<uint32_t>(std::strtoul(
            c.devargs.c_str() + at + std::strlen("framesz="), nullptr, 10)));
  }
  if (options.max_data_room != 0 && room > options.max_data_room) {
    room = options.max_data_room;
    port.max_frame_ = std::min(port.max_frame_, room);
  }
  if (room + RTE_PKTMBUF_HEADROOM > UINT16_MAX) {
    return absl::InvalidArgumentError(absl::StrCat(
        "port ", c.name, ": frames of ", room, " bytes do not fit an mbuf"));
  }
  std::string pool_name = absl::StrCat("rocemu_pool", index);
  port.rx_queues_ = std::max<uint16_t>(options.rx_queues, 1);
  // Each RX queue keeps a ring's worth of buffers with the PMD (AF_XDP:
  // its fill ring), beyond what the daemon needs.
  const unsigned pool_size =
      kPoolSize + (port.rx_queues_ - 1u) * (2u * kRingSize + 1u);
  port.pool_ = rte_pktmbuf_pool_create(
      pool_name.c_str(), pool_size, kPoolCache, 0,
      static_cast<uint16_t>(room + RTE_PKTMBUF_HEADROOM), socket_id);
  if (port.pool_ == nullptr) {
    return PortError(c, "mbuf pool (raise eal.memory_mb?)", rte_errno);
  }

  rte_eth_conf conf{};
  conf.rxmode.mtu = port.dpdk_mtu_;
  // RX interrupts let the idle loop sleep until a frame arrives (see
  // idle_wait.h); a PMD without them is configured without and polled.
  conf.intr_conf.rxq = 1;
  const uint16_t nq = port.rx_queues_;
  if (rte_eth_dev_configure(port.port_id_, nq, nq, &conf) != 0) {
    conf.intr_conf.rxq = 0;
    if (int rc = rte_eth_dev_configure(port.port_id_, nq, nq, &conf); rc != 0) {
      return PortError(c, "configure", rc);
    }
  }
  uint16_t rx_ring = kRingSize, tx_ring = kRingSize;
  rte_eth_dev_adjust_nb_rx_tx_desc(port.port_id_, &rx_ring, &tx_ring);
  for (uint16_t q = 0; q < nq; ++q) {
    if (int rc = rte_eth_rx_queue_setup(port.port_id_, q, rx_ring, socket_id,
                                        nullptr, port.pool_);
        rc != 0) {
      return PortError(c, "rx queue setup", rc);
    }
    if (int rc = rte_eth_tx_queue_setup(port.port_id_, q, tx_ring, socket_id,
                                        nullptr);
        rc != 0) {
      return PortError(c, "tx queue setup", rc);
    }
  }
  port.memif_ = std::string_view(info.driver_name) == "net_memif";
  if (port.memif_) MemifGuard::Install();
  port.memif_client_ =
      port.memif_ && c.devargs.find("role=client") != std::string::npos;
  if (int rc = rte_eth_dev_start(port.port_id_); rc != 0) {
    // A memif client whose server is not listening yet: the link stays
    // down until RejoinMemifServer finds it (a peer may start later).
    if (!port.memif_client_) return PortError(c, "start", rc);
    port.rejoin_failing_ = true;
    ROCEMU_LOG_WARNING(
        "port %s: no memif server on '%s' yet; the link is down until one "
        "listens",
        c.name, c.devargs);
  } else {
    port.running_ = true;
  }
  port.started_ = true;
  // Frames for other MACs are counted by the net stack, and IPv6 needs
  // the solicited-node multicast groups.
  if (options.promiscuous) {
    rte_eth_promiscuous_enable(port.port_id_);
    rte_eth_allmulticast_enable(port.port_id_);
  }
  // The RNIC's MAC is its own, never written to the device: for net_tap
  // the device MAC is the kernel interface's, i.e. the peer host's, and
  // reusing it would make the kernel see its own addresses on the link.
  rte_ether_addr a;
  rte_eth_macaddr_get(port.port_id_, &a);
  std::memcpy(port.mac_.data(), a.addr_bytes, 6);
  if (c.mac.has_value()) {
    port.mac_ = *c.mac;
  } else if (std::string_view(info.driver_name) == "net_tap") {
    port.mac_[0] = static_cast<uint8_t>((port.mac_[0] | 0x02) & ~0x01);
    port.mac_[5] ^= 0x01;
  }
  return port;
}

DpdkPort::DpdkPort(DpdkPort&& o) noexcept
    : port_id_(o.port_id_),
      mac_(o.mac_),
      pool_(o.pool_),
      max_frame_(o.max_frame_),
      dpdk_mtu_(o.dpdk_mtu_),
      rx_queues_(o.rx_queues_),
      started_(o.started_),
      memif_(o.memif_),
      memif_client_(o.memif_client_),
      rejoin_failing_(o.rejoin_failing_),
      running_(o.running_),
      shared_faulted_in_(o.shared_faulted_in_),
      memif_faults_(o.memif_faults_),
      rx_interrupt_(o.rx_interrupt_),
      rx_interrupt_generation_(o.rx_interrupt_generation_) {
  o.pool_ = nullptr;
  o.started_ = false;
  o.port_id_ = RTE_MAX_ETHPORTS;
}

void DpdkPort::FaultInSharedMemory() {
  if (!memif_) return;
  if (!LinkUp()) {
    shared_faulted_in_ = false;  // a reconnection maps new regions
    rx_interrupt_.Reset();
    return;
  }
  if (shared_faulted_in_) return;
  shared_faulted_in_ = true;
  const size_t bytes = FaultInMappings("memfd:memif_region");
  const absl::Status intr = rx_interrupt_.Resolve(port_id_);
  if (intr.ok()) ++rx_interrupt_generation_;
  ROCEMU_LOG_INFO(
      "port %u: memif link up; %zu KiB of shared rings faulted in; %s",
      port_id_, bytes >> 10,
      intr.ok() ? "receive interrupt on"
                : absl::StrCat("no receive interrupt (", intr.message(),
                               "): looked at on a timer while idle"));
}

bool DpdkPort::LinkUp() const {
  rte_eth_link link{};
  return rte_eth_link_get_nowait(port_id_, &link) == 0 &&
         link.link_status == RTE_ETH_LINK_UP;
}

void DpdkPort::RejoinMemifServer() {
  if (!memif_client_ || !started_ || LinkUp()) return;
  // Stopping drops nothing of ours: memif copies frames into its rings,
  // and no mbuf of this pool stays with the PMD. The link reads down as
  // soon as the PMD starts a disconnect, so the interrupt thread may still
  // be in it: stop and start there, after it.
  running_ = false;
  bool asked = false;
  RunOnInterruptThread([&] {
    rte_eth_dev_stop(port_id_);
    // Said once per outage: the PMD's start fails, and logs it, for as
    // long as no server listens; its log is quiet for the tries after the
    // first.
    QuietDpdkLog quiet("pmd.net.memif", rejoin_failing_);
    asked = rte_eth_dev_start(port_id_) == 0;
  });
  running_ = asked;
  if (!asked && !rejoin_failing_) {
    ROCEMU_LOG_WARNING(
        "port %u: memif link down and no server to join; asking again "
        "until one listens",
        port_id_);
  }
  rejoin_failing_ = !asked;
}

void DpdkPort::Stop() {
  if (started_) {
    // On the interrupt thread: a memif peer's disconnect may be running
    // there (intr_thread.h).
    RunOnInterruptThread([this] {
      rte_eth_dev_stop(port_id_);
      rte_eth_dev_close(port_id_);
    });
    started_ = false;
    running_ = false;
  }
}

DpdkPort::~DpdkPort() {
  Stop();
  if (pool_ != nullptr) rte_mempool_free(pool_);
}

}  // namespace rocemu::emulator
