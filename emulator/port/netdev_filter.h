// The kernel side of a netdev port: the BPF programs of
// netdev_filter.bpf.c (embedded in rocemud), attached to the interface
// with bpf_links, and their map of the RNIC's destination addresses.
//
// A bpf_link belongs to the file descriptors that reference it: when the
// daemon exits in any way, SIGKILL and crashes included, the kernel
// detaches the program and the interface is the kernel's alone again.
// Netlink-attached XDP programs and tc filters would outlive the process.
//
//   af_xdp     DPDK's af_xdp PMD loads rocemu_xdp itself (devargs
//              xdp_prog=, here a memfd holding the object) and attaches it
//              with libbpf's bpf_xdp_attach, a netlink call. rocemud
//              defines bpf_xdp_attach/bpf_xdp_detach itself (exported from
//              the executable, so they take precedence over libbpf's for
//              the PMD, netdev_filter.cc): for an interface this module
//              prepared, the attach is a bpf_link in the mode CheckXdp
//              found, and the PMD's detach at close releases it.
//   af_packet  rocemu_tc at tcx ingress (a bpf_link, Linux 6.6 and
//              later); on older kernels a clsact/cls_bpf filter through
//              netlink, which a SIGKILL leaves behind (the next start
//              replaces it; docs/daemon.md).
#ifndef ROCEMU_EMULATOR_PORT_NETDEV_FILTER_H_
#define ROCEMU_EMULATOR_PORT_NETDEV_FILTER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "emulator/net/net_types.h"

namespace rocemu::emulator {

class NetdevFilter {
 public:
  // A memfd holding the BPF object, for the PMD's xdp_prog=/proc/self/fd/N.
  // The caller owns it.
  static absl::StatusOr<int> ObjectMemfd();
  // Before the af_xdp PMD starts: whether rocemu_xdp can be attached to
  // the interface, and in which mode. Refused (with the reason) when
  // another program's XDP program is attached (rocemud never replaces
  // one) or the driver takes neither a native nor a generic (skb) XDP
  // program. A rocemu_xdp that a daemon killed before bpf_links existed
  // left attached with netlink is detached (it passes every frame).
  // Registers the interface: the PMD's bpf_xdp_attach for it becomes a
  // bpf_link in the mode found. Returns "native" or "generic".
  static absl::StatusOr<std::string> PrepareXdp(int ifindex,
                                                const std::string& ifname);
  // After the af_xdp PMD attached rocemu_xdp (rte_eth_rx_queue_setup): the
  // attachment and its address map.
  static absl::StatusOr<std::unique_ptr<NetdevFilter>> FromXdp(
      int ifindex, const std::string& ifname);
  // af_packet: loads the object and attaches rocemu_tc at the interface's
  // ingress.
  static absl::StatusOr<std::unique_ptr<NetdevFilter>> AttachTc(
      int ifindex, const std::string& ifname);
  ~NetdevFilter();
  NetdevFilter(const NetdevFilter&) = delete;
  NetdevFilter& operator=(const NetdevFilter&) = delete;

  // The RNIC's destinations: frames to other addresses stay the kernel's.
  absl::Status SetDestinations(std::span<const IpAddr> dsts);
  // How it is attached, for the log and rocemu-ctl: "xdp native (bpf_link)"
  const std::string& description() const { return description_; }
  // Whether a SIGKILL of the daemon detaches it (a bpf_link).
  bool detached_by_kernel() const { return by_link_; }

 private:
  NetdevFilter() = default;

  int map_fd_ = -1;
  // af_packet: the tcx link, or -1 with a netlink-attached filter (then
  // tc_ifindex_ says where to remove it from).
  int tc_link_fd_ = -1;
  int tc_ifindex_ = 0;
  void* object_ = nullptr;  // bpf_object*, af_packet only
  bool by_link_ = false;
  std::string description_;
  std::vector<IpAddr> dsts_;
};

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_PORT_NETDEV_FILTER_H_
