// A netdev port (ports[].netdev, `rocemud --netdev IF`): the RNIC shares a
// kernel interface with the kernel, as rxe does. This is the port's side of
// the kernel: one daemon per interface (an abstract socket named after its
// index, which the kernel releases with the process), the interface's
// state (netdev_watch.h), the choice between AF_XDP and af_packet and the
// DPDK devargs for it, and the filter that keeps the RNIC's frames from the
// kernel (netdev_filter.h). docs/daemon.md, "On a host's own NIC".
#ifndef ROCEMU_EMULATOR_PORT_NETDEV_PORT_H_
#define ROCEMU_EMULATOR_PORT_NETDEV_PORT_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "config/config.h"
#include "emulator/net/net_types.h"
#include "emulator/port/netdev_filter.h"
#include "emulator/port/netdev_watch.h"

namespace rocemu::emulator {

class NetdevPort {
 public:
  // The data room of the af_xdp port's mbufs. The PMD's UMEM chunk is one
  // mbuf pool element, which must fit a 4 KiB page: 64 bytes of pool
  // header, the 128-byte mbuf, its 128-byte headroom and this make 63
  // cache lines (the mempool pads an even count by one line, to spread
  // elements over memory channels: 64 would become 65, over the page).
  static constexpr uint32_t kAfXdpDataRoom = 3712;
  // Frames of up to this many bytes fit: the kernel keeps
  // XDP_PACKET_HEADROOM (256) in front of a received frame.
  static constexpr uint32_t kAfXdpMaxFrame = kAfXdpDataRoom - 256;

  // Before the EAL starts (it probes the devargs this chooses): claims the
  // interface for this daemon, reads it, and with netdev_mode auto or
  // af_xdp checks that an XDP program can be attached. `index` numbers
  // the DPDK device (net_af_xdp<index>).
  static absl::StatusOr<std::unique_ptr<NetdevPort>> Open(
      const config::PortConfig& port, unsigned index,
      const NetdevWatch::NeighbourFn& on_neighbour);
  ~NetdevPort();
  NetdevPort(const NetdevPort&) = delete;
  NetdevPort& operator=(const NetdevPort&) = delete;

  const std::string& devargs() const { return devargs_; }
  bool af_xdp() const { return af_xdp_; }
  // "af_xdp, xdp native (bpf_link)", for the log and rocemu-ctl.
  std::string Describe() const;
  // RX queues the port polls (AF_XDP: one socket per queue of the
  // interface; af_packet: one socket sees them all).
  uint16_t rx_queues() const { return rx_queues_; }
  // The largest Ethernet MTU the DPDK device carries (frames up to the
  // interface's own MTU within it).
  uint32_t max_mtu() const { return max_mtu_; }
  // The link MTU the RNIC uses: the interface's, within max_mtu().
  uint32_t LinkMtu() const;

  // After the DPDK port started: the kernel-side filter, told the
  // interface's addresses.
  absl::Status AttachFilter();
  // The RNIC's destinations changed (addresses, multicast groups).
  absl::Status SetDestinations(std::span<const IpAddr> dsts);
  // The kernel joins (`join`) or leaves an IP multicast group on the
  // interface for the RNIC: its IGMP/MLD reports announce it, and its MAC
  // filter lets the group's frames in.
  absl::Status JoinGroup(const IpAddr& group, bool join);

  NetdevWatch& watch() { return *watch_; }
  const InterfaceState& state() const { return watch_->state(); }

 private:
  NetdevPort() = default;
  // The one-daemon-per-interface claim; the error names the holder's pid.
  absl::Status Claim(int ifindex, const std::string& ifname);

  std::unique_ptr<NetdevWatch> watch_;
  std::unique_ptr<NetdevFilter> filter_;
  std::string devargs_;
  std::string xdp_mode_;  // "native" or "generic" (af_xdp)
  bool af_xdp_ = false;
  uint16_t rx_queues_ = 1;
  uint32_t max_mtu_ = 0;
  int claim_fd_ = -1;
  int group_fd_[2] = {-1, -1};  // UDP sockets holding memberships: v4, v6
  int object_fd_ = -1;          // the memfd xdp_prog= names
};

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_PORT_NETDEV_PORT_H_
