// One configured DPDK ethdev: found by name after EAL init (a vdev whose
// probe failed is an error here, since EAL init does not fail for it),
// configured with one RX and one TX queue and an mbuf pool whose data room
// holds a whole frame of the port's MTU, so RX frames are contiguous and
// TX buffers can be lent to the RNIC as they are.
#ifndef ROCEMU_EMULATOR_PORT_DPDK_PORT_H_
#define ROCEMU_EMULATOR_PORT_DPDK_PORT_H_

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "config/config.h"
#include "emulator/net/net_types.h"
#include "emulator/port/memif_guard.h"
#include "emulator/port/memif_rx_interrupt.h"

namespace rocemu::emulator {

class DpdkPort {
 public:
  static constexpr uint16_t kRingSize = 1024;

  // What a netdev port (port/netdev_port.h) asks of its device beyond the
  // config: the defaults are every other port's.
  struct Options {
    // RX queues to set up and poll (AF_XDP: one socket per queue of the
    // interface); TX uses queue 0. As many TX queues are set up, as the
    // af_xdp PMD pairs them.
    uint16_t rx_queues = 1;
    // A cap on the mbuf data room (AF_XDP: a pool element must fit one
    // page, the UMEM chunk), 0: none.
    uint32_t max_data_room = 0;
    // The largest MTU the port's frames are sized for, if above the
    // config's (a netdev port's interface may raise its MTU later).
    uint32_t max_mtu = 0;
    // Off for a kernel interface shared with the kernel: promiscuous mode
    // would be the interface's, and the kernel's MAC filter already lets
    // the RNIC's unicast, broadcast and joined groups through.
    bool promiscuous = true;
  };

  // Finds, configures and starts the port; `index` names the mempool.
  static absl::StatusOr<DpdkPort> Open(const config::PortConfig& config,
                                       unsigned index, int socket_id,
                                       const Options& options);
  static absl::StatusOr<DpdkPort> Open(const config::PortConfig& config,
                                       unsigned index, int socket_id) {
    return Open(config, index, socket_id, Options{});
  }
  DpdkPort(DpdkPort&& other) noexcept;
  DpdkPort& operator=(DpdkPort&&) = delete;
  ~DpdkPort();

  uint16_t port_id() const { return port_id_; }
  // The RNIC's MAC: from the config, else the device's (net_tap: derived
  // from it, as the tap device MAC belongs to the kernel side).
  const MacAddr& mac() const { return mac_; }
  rte_mempool* pool() const { return pool_; }
  // Largest frame the port sends (Ethernet header, VLAN tag, MTU bytes).
  uint32_t max_frame() const { return max_frame_; }
  uint32_t dpdk_mtu() const { return dpdk_mtu_; }
  uint16_t rx_queues() const { return rx_queues_; }
  // memif's shared region (its rings and frame buffers, a memfd each side
  // maps) is faulted in by the first frames through each page: ~4 K page
  // faults per process on every new connection, which held a program's
  // first ~100 ms of traffic (the embedded mode connects with each
  // program) to a third of the steady rate. Hugepage memory comes
  // faulted in; this does the same for memif once the link is up, off the
  // data path. Called every millisecond; a check of the link otherwise.
  void FaultInSharedMemory();
  // The link status the PMD reports now. memif reads its shared state;
  // kernel-backed PMDs (af_packet, tap) may ask the kernel (a syscall).
  bool LinkUp() const;
  bool memif() const { return memif_; }
  bool memif_client() const { return memif_client_; }
  // Started, and not stopped since: only then may the queues be polled (a
  // stopped port's bursts are DPDK's placeholders, which log and dump the
  // stack on every call). False for a memif client waiting for a server.
  bool running() const { return running_; }
  // A memif client sends its connection request once, when the port
  // starts (DPDK 22.11): a server that was not listening yet, or that
  // went away and came back, is never joined. With the link down, this
  // stops and starts the port, which asks again (one connect(2)). The
  // caller paces it.
  void RejoinMemifServer();
  void Stop();

  // The queue bursts. On a memif port each runs under MemifGuard: a burst
  // caught by the PMD's teardown of a departing peer moves nothing, and
  // counts in memif_faults(). TxBurst's *consumed is how many of `pkts`
  // the PMD took (sent, or lost to such a fault: those the caller must
  // neither send again nor free).
  uint16_t RxBurst(rte_mbuf** pkts, uint16_t n) {
    if (!memif_) {
      uint16_t got = rte_eth_rx_burst(port_id_, 0, pkts, n);
      // A netdev port on AF_XDP has a socket per RX queue of its
      // interface: one burst in all (the others fill what queue 0 left).
      for (uint16_t q = 1; q < rx_queues_ && got < n; ++q) {
        got = static_cast<uint16_t>(
            got + rte_eth_rx_burst(port_id_, q, pkts + got, n - got));
      }
      return got;
    }
    bool faulted = false;
    const uint16_t got = MemifGuard::Run(
        [&] { return rte_eth_rx_burst(port_id_, 0, pkts, n); }, &faulted);
    memif_faults_ += faulted;
    return got;
  }
  uint16_t TxBurst(rte_mbuf** pkts, uint16_t n, uint16_t* consumed) {
    if (!memif_) return *consumed = rte_eth_tx_burst(port_id_, 0, pkts, n);
    bool faulted = false;
    const uint16_t sent = MemifGuard::Run(
        [&] { return rte_eth_tx_burst(port_id_, 0, pkts, n); }, &faulted);
    memif_faults_ += faulted;
    *consumed = faulted ? n : sent;
    return sent;
  }
  uint64_t memif_faults() const { return memif_faults_; }

  // A memif port's receive interrupt (port/memif_rx_interrupt.h): found by
  // FaultInSharedMemory() on each connection. Arm before the loop's last
  // look at the ports and sleep on rx_interrupt_fd(); disarm on waking.
  // False, or a no-op, while there is none (link down, not memif).
  bool rx_interrupt_ready() const { return rx_interrupt_.ready(); }
  int rx_interrupt_fd() const { return rx_interrupt_.fd(); }
  // Counts the connections whose interrupt was found: a new one is a new
  // eventfd, even if it reuses the old one's number.
  uint64_t rx_interrupt_generation() const { return rx_interrupt_generation_; }
  void ArmRxInterrupt() { GuardRxInterrupt(true); }
  void DisarmRxInterrupt() { GuardRxInterrupt(false); }

 private:
  DpdkPort() = default;
  void GuardRxInterrupt(bool arm) {
    if (!rx_interrupt_.ready()) return;
    bool faulted = false;
    MemifGuard::Run(
        [&] {
          arm ? rx_interrupt_.Arm() : rx_interrupt_.Disarm();
          return uint16_t{0};
        },
        &faulted);
    memif_faults_ += faulted;
    if (faulted) rx_interrupt_.Reset();
  }
  uint16_t port_id_ = RTE_MAX_ETHPORTS;
  MacAddr mac_{};
  rte_mempool* pool_ = nullptr;
  uint32_t max_frame_ = 0;
  uint32_t dpdk_mtu_ = 0;
  uint16_t rx_queues_ = 1;
  bool started_ = false;
  bool memif_ = false;
  bool memif_client_ = false;
  bool rejoin_failing_ = false;
  bool running_ = false;
  bool shared_faulted_in_ = false;
  uint64_t memif_faults_ = 0;
  MemifRxInterrupt rx_interrupt_;
  uint64_t rx_interrupt_generation_ = 0;
};

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_PORT_DPDK_PORT_H_
