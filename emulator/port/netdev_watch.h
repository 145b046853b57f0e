// A kernel network interface as a netdev port follows it, through
// rtnetlink (libmnl): its index, name, MAC, MTU, operational state and
// addresses, and its neighbour table. rxe's device follows its netdev the
// same way inside the kernel; here the kernel's announcements are read once
// a millisecond by the daemon's loop (a non-blocking recv, off the data
// path). A missing neighbour is resolved by the kernel itself (what
// `ip neigh replace ADDR dev IF use` asks for): its ARP request or neighbour
// solicitation, its table, announced back to us; the daemon never answers
// or sends ARP/ND of its own on a netdev port.
#ifndef ROCEMU_EMULATOR_PORT_NETDEV_WATCH_H_
#define ROCEMU_EMULATOR_PORT_NETDEV_WATCH_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "emulator/net/net_types.h"

struct mnl_socket;
struct nlmsghdr;

namespace rocemu::emulator {

struct InterfaceAddress {
  IpAddr ip{};  // IPv4 as ::ffff:a.b.c.d
  bool ipv6 = false;
  uint8_t prefix_len = 0;
  bool operator==(const InterfaceAddress&) const = default;
};

struct InterfaceState {
  int index = 0;
  std::string name;
  MacAddr mac{};
  uint32_t mtu = 0;
  // Operationally up (carrier and IFF_UP): what a NIC's link is.
  bool up = false;
  // False once the interface was deleted (or moved to another namespace).
  bool exists = true;
  // Usable addresses in the order the kernel announced them: IPv6
  // addresses still in duplicate address detection (or failed it) are
  // left out until DAD is over, as the kernel itself does not use them.
  std::vector<InterfaceAddress> addresses;
};

// The kernel's neighbour entry for `ip` on the interface: its MAC, or
// nullopt when it is gone or unresolvable (FAILED, INCOMPLETE).
struct NeighbourUpdate {
  IpAddr ip{};
  std::optional<MacAddr> mac;
};

class NetdevWatch {
 public:
  // What Poll found changed (a bit set).
  enum Change : uint32_t {
    kLink = 1,  // operational state
    kMtu = 2,
    kMac = 4,
    kAddresses = 8,
    kName = 16,  // renamed (the index is what is followed)
    kGone = 32,  // deleted or moved out of this namespace
  };
  using NeighbourFn = std::function<void(const NeighbourUpdate&)>;

  // Looks the interface up by name in this network namespace and reads
  // its state, addresses and neighbours (`on_neighbour` gets each entry).
  static absl::StatusOr<std::unique_ptr<NetdevWatch>> Open(
      std::string_view name, const NeighbourFn& on_neighbour);
  ~NetdevWatch();
  NetdevWatch(const NetdevWatch&) = delete;
  NetdevWatch& operator=(const NetdevWatch&) = delete;

  const InterfaceState& state() const { return state_; }
  // Reads what the kernel announced since the last call, without waiting;
  // neighbour entries of the interface go to `on_neighbour`. After a lost
  // announcement (the socket's buffer overflowed) everything is read
  // again. Returns the Change bits.
  uint32_t Poll(const NeighbourFn& on_neighbour);
  // Asks the kernel to resolve `ip` on the interface (RTM_NEWNEIGH with
  // NTF_USE): its answer comes back through Poll.
  void Resolve(const IpAddr& ip);
  // Readable when announcements wait (for an idle loop's epoll).
  int fd() const;

 private:
  NetdevWatch() = default;
  absl::Status Dump(uint16_t type, const NeighbourFn& on_neighbour,
                    uint32_t* changes);
  // One message (announcement or dump entry) about any interface.
  void Handle(const nlmsghdr* nlh, const NeighbourFn& on_neighbour,
              uint32_t* changes);
  void HandleLink(const nlmsghdr* nlh, uint32_t* changes);
  void HandleAddress(const nlmsghdr* nlh, uint32_t* changes);
  void HandleNeighbour(const nlmsghdr* nlh, const NeighbourFn& on_neighbour);

  InterfaceState state_;
  mnl_socket* events_ = nullptr;    // subscribed to link, address, neighbour
  mnl_socket* requests_ = nullptr;  // dumps
  mnl_socket* resolver_ = nullptr;  // Resolve's requests (answers dropped)
  bool resolving_ = false;          // Resolve sent since the last drain
  uint32_t seq_ = 0;
  std::vector<char> buf_;
};

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_PORT_NETDEV_WATCH_H_
