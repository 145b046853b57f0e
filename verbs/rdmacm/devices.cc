// The devices the CM runs on: every rocemu device the drop-in libibverbs
// lists, opened once for the process (as librdmacm's ucma_init opens every
// device), with the daemon's CM opened on that session; and which device
// an IP address belongs to.
#include <arpa/inet.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "verbs/client/client_control.h"
#include "verbs/ibverbs/dropin.h"
#include "verbs/rdmacm/cma.h"

namespace rocemu::rdmacm {
namespace {

std::vector<CmDevice*>& DeviceVector() {
  static auto* v = new std::vector<CmDevice*>;
  return *v;
}

bool IsZero(const ibv_gid& g) {
  static const ibv_gid kZero{};
  return std::memcmp(&g, &kZero, sizeof(g)) == 0;
}

int OpenCm(CmDevice* d) {
  d->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (d->event_fd < 0) return errno;
  verbs::wire::CmOpenResp resp{};
  int ring_fd = -1;
  int err = verbs::client::Call(
      d->rc, verbs::wire::MsgType::kCmOpen, verbs::wire::Empty{}, &resp,
      std::span<const int>(&d->event_fd, 1), {&ring_fd, 1});
  if (err != 0) return err;
  absl::StatusOr<verbs::ShmRing> ring = verbs::ShmRing::Attach(
      ring_fd, sizeof(verbs::CmEventSlot), resp.capacity);
  if (!ring.ok()) {
    close(ring_fd);
    return EPROTO;
  }
  ring->CloseFd();
  d->ring = *std::move(ring);
  return 0;
}

CmDevice* OpenDevice(ibv_device* dev) {
  auto* d = new CmDevice;
  d->device = dev;
  d->verbs = ibv_open_device(dev);
  if (d->verbs == nullptr) {
    delete d;
    return nullptr;
  }
  d->rc = ibverbs::Ctx(d->verbs)->rc;
  if (ibv_query_device(d->verbs, &d->attr) != 0 ||
      ___ibv_query_port(d->verbs, 1, &d->port) != 0 ||
      (d->pd = ibv_alloc_pd(d->verbs)) == nullptr || OpenCm(d) != 0) {
    if (d->event_fd >= 0) close(d->event_fd);
    if (d->pd != nullptr) ibv_dealloc_pd(d->pd);
    ibv_close_device(d->verbs);
    delete d;
    return nullptr;
  }
  // The valid entries only, a batch per round trip (one, for a port's
  // handful of addresses); the rest stay zero, as ibv_query_gid reads them.
  d->gids.assign(static_cast<size_t>(d->port.gid_tbl_len), ibv_gid{});
  std::vector<rocemu_gid_entry> valid(d->gids.size());
  const int n = rocemu_query_gid_table(d->rc, 1, valid.data(),
                                       static_cast<int>(valid.size()));
  for (int i = 0; i < n; ++i) {
    if (valid[i].index < d->gids.size()) {
      std::memcpy(d->gids[valid[i].index].raw, valid[i].gid, 16);
    }
  }
  return d;
}

// Bits two 16-byte addresses share from the top.
int CommonPrefix(const uint8_t* a, const uint8_t* b) {
  int n = 0;
  for (int i = 0; i < 16; ++i) {
    const uint8_t x = a[i] ^ b[i];
    if (x == 0) {
      n += 8;
      continue;
    }
    return n + __builtin_clz(x) - 24;
  }
  return n;
}

CmDevice* FindGid(const ibv_gid& want, uint8_t* gid_index) {
  for (CmDevice* d : DeviceVector()) {
    for (size_t i = 0; i < d->gids.size(); ++i) {
      if (!IsZero(d->gids[i]) &&
          std::memcmp(&d->gids[i], &want, sizeof(want)) == 0) {
        *gid_index = static_cast<uint8_t>(i);
        return d;
      }
    }
  }
  return nullptr;
}

}  // namespace

std::mutex& Mu() {
  static auto* mu = new std::mutex;
  return *mu;
}

const std::vector<CmDevice*>& Devices() { return DeviceVector(); }

int Init() {
  static std::once_flag once;
  static int result = 0;
  std::call_once(once, [] {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (list == nullptr) {
      result = errno != 0 ? errno : ENODEV;
      return;
    }
    std::lock_guard<std::mutex> lock(Mu());
    for (int i = 0; i < n; ++i) {
      CmDevice* d = OpenDevice(list[i]);
      if (d == nullptr) continue;
      DeviceVector().push_back(d);
      WatchDevice(d);
    }
    // The ibv_device records outlive the list (the drop-in keeps them).
    ibv_free_device_list(list);
    if (DeviceVector().empty()) result = ENODEV;
  });
  return result;
}

CmDevice* DeviceOfAddr(const sockaddr* addr, uint8_t* gid_index) {
  ibv_gid g;
  if (!SockaddrToGid(addr, &g)) return nullptr;
  return FindGid(g, gid_index);
}

CmDevice* LoopbackDevice() {
  CmDevice* first = nullptr;
  for (CmDevice* d : DeviceVector()) {
    if (d->dead) continue;
    if (first == nullptr) first = d;
    ibv_port_attr pa{};
    if (___ibv_query_port(d->verbs, 1, &pa) == 0 &&
        pa.state == IBV_PORT_ACTIVE) {
      return d;
    }
  }
  return first;
}

CmDevice* DeviceOfContext(ibv_context* verbs) {
  for (CmDevice* d : DeviceVector()) {
    if (d->verbs == verbs) return d;
  }
  return nullptr;
}

CmDevice* PickDevice(const sockaddr* dst, uint8_t* gid_index) {
  ibv_gid want;
  if (!SockaddrToGid(dst, &want)) return nullptr;
  // Our own address: the connection stays on that device.
  if (CmDevice* d = FindGid(want, gid_index)) return d;
  // The kernel's route to dst, when its source is one of our addresses
  // (a daemon on a TAP device whose address the host also carries).
  const int fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    sockaddr_storage probe{};
    std::memcpy(&probe, dst, SockaddrLen(dst));
    SetPort(reinterpret_cast<sockaddr*>(&probe), 9);
    sockaddr_storage src{};
    socklen_t len = sizeof(src);
    if (connect(fd, reinterpret_cast<sockaddr*>(&probe), SockaddrLen(dst)) ==
            0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&src), &len) == 0) {
      close(fd);
      if (CmDevice* d =
              DeviceOfAddr(reinterpret_cast<sockaddr*>(&src), gid_index)) {
        return d;
      }
    } else {
      close(fd);
    }
  }
  // Otherwise the address of ours nearest to dst, of the same family.
  const bool v4 = IsIpv4Mapped(want.raw);
  CmDevice* best = nullptr;
  int best_len = -1;
  for (CmDevice* d : DeviceVector()) {
    if (d->dead) continue;
    for (size_t i = 0; i < d->gids.size(); ++i) {
      const ibv_gid& g = d->gids[i];
      if (IsZero(g) || IsIpv4Mapped(g.raw) != v4) continue;
      const int len = CommonPrefix(g.raw, want.raw);
      if (len > best_len) {
        best_len = len;
        best = d;
        *gid_index = static_cast<uint8_t>(i);
      }
    }
  }
  return best;
}

}  // namespace rocemu::rdmacm

extern "C" {

ibv_context** rdma_get_devices(int* num_devices) {
  using namespace rocemu::rdmacm;
  Init();
  std::lock_guard<std::mutex> lock(Mu());
  const auto& devs = Devices();
  auto** list =
      static_cast<ibv_context**>(calloc(devs.size() + 1, sizeof(ibv_context*)));
  if (list == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  int n = 0;
  for (CmDevice* d : devs) list[n++] = d->verbs;
  if (num_devices != nullptr) *num_devices = n;
  return list;
}

void rdma_free_devices(ibv_context** list) { free(list); }

}  // extern "C"
