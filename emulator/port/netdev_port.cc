#include "emulator/port/netdev_port.h"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "emulator/logging.h"

namespace rocemu::emulator {
namespace {

// Ethernet header and the af_packet ring frame's own header and padding
// in front of the frame (TPACKET2_HDRLEN, aligned, plus slack).
constexpr uint32_t kEthOverhead = 14;
constexpr uint32_t kPacketFrameOverhead = 128;

uint32_t RoundUp(uint32_t v, uint32_t to) { return (v + to - 1) / to * to; }

// The interface's RX queues: frames arrive on any of them (RSS), and an
// AF_XDP socket serves one. sysfs when it shows this namespace's
// interface (`ip netns exec` mounts the namespace's), else ethtool's
// channel counts.
struct Queues {
  uint32_t rx = 1;        // RX queues in use
  uint32_t combined = 1;  // the AF_XDP PMD's limit (combined channels)
};

Queues CountQueues(int ifindex, const std::string& name) {
  Queues q;
  ethtool_channels ch{};
  ch.cmd = ETHTOOL_GCHANNELS;
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, name.c_str(), IFNAMSIZ - 1);
  ifr.ifr_data = reinterpret_cast<char*>(&ch);
  const int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s >= 0 && ioctl(s, SIOCETHTOOL, &ifr) == 0 && ch.max_combined > 0) {
    q.combined = std::max<uint32_t>(ch.combined_count, 1);
    q.rx = std::max<uint32_t>(ch.combined_count + ch.rx_count, 1);
  }
  if (s >= 0) close(s);
  const std::string dir = "/sys/class/net/" + name;
  std::ifstream index_file(dir + "/ifindex");
  int sys_index = 0;
  std::error_code ec;
  if ((index_file >> sys_index) && sys_index == ifindex) {
    uint32_t rx = 0;
    for (const auto& e :
         std::filesystem::directory_iterator(dir + "/queues", ec)) {
      if (e.path().filename().string().rfind("rx-", 0) == 0) ++rx;
    }
    if (rx > 0) q.rx = rx;
  }
  return q;
}

}  // namespace

absl::StatusOr<std::unique_ptr<NetdevPort>> NetdevPort::Open(
    const config::PortConfig& port, unsigned index,
    const NetdevWatch::NeighbourFn& on_neighbour) {
  std::unique_ptr<NetdevPort> p(new NetdevPort());
  absl::StatusOr<std::unique_ptr<NetdevWatch>> watch =
      NetdevWatch::Open(port.netdev, on_neighbour);
  if (!watch.ok()) {
    return absl::Status(
        watch.status().code(),
        absl::StrCat("port ", port.name, ": ", watch.status().message()));
  }
  p->watch_ = *std::move(watch);
  const InterfaceState& st = p->watch_->state();
  if (absl::Status s = p->Claim(st.index, st.name); !s.ok()) return s;

  std::string why_not_xdp;
  if (port.netdev_mode != config::NetdevMode::kAfPacket) {
    const Queues q = CountQueues(st.index, st.name);
    if (q.rx > q.combined) {
      why_not_xdp = absl::StrCat(
          st.name, " receives on ", q.rx, " queues and its driver offers ",
          "AF_XDP sockets on ", q.combined,
          " (combined channels): RoCEv2 frames on the others would reach "
          "the kernel");
    } else {
      absl::StatusOr<std::string> mode =
          NetdevFilter::PrepareXdp(st.index, st.name);
      if (mode.ok()) {
        p->af_xdp_ = true;
        p->xdp_mode_ = *mode;
        p->rx_queues_ = static_cast<uint16_t>(q.rx);
      } else {
        why_not_xdp = std::string(mode.status().message());
      }
    }
    if (!p->af_xdp_ && port.netdev_mode == config::NetdevMode::kAfXdp) {
      return absl::FailedPreconditionError(absl::StrCat(
          "port ", port.name, " (netdev_mode af_xdp): ", why_not_xdp));
    }
    if (!p->af_xdp_) {
      ROCEMU_LOG_WARNING("port %s: no AF_XDP: %s; using af_packet", port.name,
                         why_not_xdp);
    }
  }
  if (p->af_xdp_) {
    absl::StatusOr<int> fd = NetdevFilter::ObjectMemfd();
    if (!fd.ok()) return fd.status();
    p->object_fd_ = *fd;
    p->max_mtu_ = kAfXdpMaxFrame - kEthOverhead;
    // The PMD loads the program from a path: the memfd's.
    p->devargs_ = absl::StrCat("net_af_xdp", index, ",iface=", st.name,
                               ",start_queue=0,queue_count=", p->rx_queues_,
                               ",xdp_prog=/proc/self/fd/", p->object_fd_);
  } else {
    // A ring frame holds the interface's MTU as it is now; a larger MTU
    // later is used only up to it (max_mtu).
    const uint32_t frame = RoundUp(
        std::max<uint32_t>(st.mtu, 1500) + kEthOverhead + kPacketFrameOverhead,
        2048);
    p->max_mtu_ = frame - kEthOverhead - kPacketFrameOverhead;
    p->devargs_ =
        absl::StrCat("net_af_packet", index, ",iface=", st.name,
                     ",framesz=", frame, ",blocksz=", RoundUp(frame, 4096));
  }
  return p;
}

NetdevPort::~NetdevPort() {
  filter_.reset();
  for (int fd : group_fd_) {
    if (fd >= 0) close(fd);  // the kernel leaves the groups
  }
  if (object_fd_ >= 0) close(object_fd_);
  if (claim_fd_ >= 0) close(claim_fd_);
}

absl::Status NetdevPort::Claim(int ifindex, const std::string& ifname) {
  // An abstract socket: per network namespace, like interface indexes, and
  // released by the kernel with the process, however it ends.
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string name = absl::StrCat("rocemud/netdev/", ifindex);
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  const socklen_t len =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  claim_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (claim_fd_ < 0) return absl::ErrnoToStatus(errno, "socket");
  if (bind(claim_fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0) {
    listen(claim_fd_, 4);
    return absl::OkStatus();
  }
  if (errno != EADDRINUSE) return absl::ErrnoToStatus(errno, "claim socket");
  std::string holder = "another rocemud";
  const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s >= 0 && connect(s, reinterpret_cast<sockaddr*>(&addr), len) == 0) {
    ucred cred{};
    socklen_t cl = sizeof(cred);
    if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0) {
      holder = absl::StrCat("rocemud pid ", cred.pid);
    }
  }
  if (s >= 0) close(s);
  return absl::AlreadyExistsError(
      absl::StrCat(ifname, " is already a rocemu device: ", holder,
                   " runs on it (one daemon per interface)"));
}

std::string NetdevPort::Describe() const {
  std::string d = af_xdp_ ? absl::StrCat("af_xdp, ", rx_queues_,
                                         rx_queues_ == 1 ? " queue" : " queues")
                          : std::string("af_packet");
  if (filter_ != nullptr) absl::StrAppend(&d, ", ", filter_->description());
  return d;
}

uint32_t NetdevPort::LinkMtu() const {
  return std::min(watch_->state().mtu, max_mtu_);
}

absl::Status NetdevPort::AttachFilter() {
  const InterfaceState& st = watch_->state();
  absl::StatusOr<std::unique_ptr<NetdevFilter>> f =
      af_xdp_ ? NetdevFilter::FromXdp(st.index, st.name)
              : NetdevFilter::AttachTc(st.index, st.name);
  if (!f.ok()) return f.status();
  filter_ = *std::move(f);
  return absl::OkStatus();
}

absl::Status NetdevPort::JoinGroup(const IpAddr& group, bool join) {
  const bool v4 = IsIpv4Mapped(group);
  int& fd = group_fd_[v4 ? 0 : 1];
  if (fd < 0)
    fd = socket(v4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::ErrnoToStatus(errno, "socket");
  int rc;
  if (v4) {
    ip_mreqn m{};
    std::memcpy(&m.imr_multiaddr, group.data() + 12, 4);
    m.imr_ifindex = watch_->state().index;
    rc = setsockopt(fd, IPPROTO_IP,
                    join ? IP_ADD_MEMBERSHIP : IP_DROP_MEMBERSHIP, &m,
                    sizeof(m));
  } else {
    ipv6_mreq m{};
    std::memcpy(&m.ipv6mr_multiaddr, group.data(), 16);
    m.ipv6mr_interface = static_cast<unsigned>(watch_->state().index);
    rc = setsockopt(fd, IPPROTO_IPV6, join ? IPV6_JOIN_GROUP : IPV6_LEAVE_GROUP,
                    &m, sizeof(m));
  }
  return rc == 0 ? absl::OkStatus()
                 : absl::ErrnoToStatus(errno, join ? "join" : "leave");
}

absl::Status NetdevPort::SetDestinations(std::span<const IpAddr> dsts) {
  if (filter_ == nullptr) return absl::OkStatus();
  return filter_->SetDestinations(dsts);
}

}  // namespace rocemu::emulator
