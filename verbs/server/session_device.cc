// Session handlers: Hello, device/port/GID/P_Key queries, async events.
#include <errno.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"
#include "nic/access.h"
#include "nic/qp_attr.h"
#include "verbs/server/session_convert.h"
#include "verbs/server/session_objects.h"
#include "verbs/server/session_server.h"
#include "verbs/wire/attr_copy.h"

namespace rocemu::verbs {

absl::Status SessionServer::OnHello(Client& c, const wire::HelloReq& r,
                                    wire::HelloResp* out) {
  if (c.hello) return absl::FailedPreconditionError("hello sent twice");
  if (r.min_version > wire::kVersion || r.max_version < wire::kVersion) {
    return absl::OutOfRangeError(
        absl::StrFormat("client speaks versions %u..%u, the daemon speaks %u",
                        r.min_version, r.max_version, wire::kVersion));
  }
  c.hello = true;
  c.name.assign(r.client_name, strnlen(r.client_name, sizeof(r.client_name)));
  out->version = wire::kVersion;
  out->client_id = c.id;
  out->capabilities = wire::kCapShmBuffers | wire::kCapCompChannel |
                      wire::kCapProcessMemory | wire::kCapSrq |
                      wire::kCapAsyncEvents;
  out->pid = static_cast<uint32_t>(c.cred.pid);
  out->uid = c.cred.uid;
  out->gid = c.cred.gid;
  out->sq_slot_size = sizeof(SqSlot);
  out->rq_slot_size = sizeof(RqSlot);
  out->cqe_slot_size = sizeof(CqeSlot);
  std::strncpy(out->device_name, options_.device_name.c_str(),
               sizeof(out->device_name) - 1);
  return absl::OkStatus();
}

absl::Status SessionServer::OnQueryDevice(wire::QueryDeviceResp* out) {
  const nic::DeviceAttr& a = rnic_.device_attr();
  std::strncpy(out->fw_ver, a.fw_ver.c_str(), sizeof(out->fw_ver) - 1);
  out->node_guid = a.node_guid;
  out->sys_image_guid = a.sys_image_guid;
  rocemu::verbs::CopyDeviceLimits(a, out);
  out->max_inline_data = a.max_inline_data;
  out->max_msg_sz = a.max_msg_sz;
  return absl::OkStatus();
}

absl::Status SessionServer::OnQueryPort(const wire::QueryPortReq& r,
                                        wire::QueryPortResp* out) {
  if (r.port_num != 1) return absl::InvalidArgumentError("no such port");
  const nic::PortAttr& p = rnic_.port_attr();
  const nic::DeviceCounters k = rnic_.QueryCounters();
  std::memcpy(out->gid, rnic_.config().gid.data(), sizeof(out->gid));
  std::memcpy(out->mac, rnic_.config().mac.data(), sizeof(out->mac));
  out->active_mtu = static_cast<uint8_t>(p.active_mtu);
  out->state = static_cast<uint8_t>(p.state);
  out->max_mtu = static_cast<uint8_t>(p.max_mtu);
  out->link_layer = p.link_layer;
  out->active_width = p.active_width;
  out->active_speed = p.active_speed;
  out->phys_state = p.phys_state;
  out->max_vl_num = p.max_vl_num;
  out->pkey_tbl_len = rnic_.pkey_table().capacity();
  out->gid_tbl_len = static_cast<int32_t>(rnic_.gid_table().capacity());
  out->port_cap_flags = p.port_cap_flags;
  out->max_msg_sz = p.max_msg_sz;
  out->bad_pkey_cntr =
      static_cast<uint32_t>(std::min<uint64_t>(k.bad_pkey_cntr, UINT32_MAX));
  out->qkey_viol_cntr =
      static_cast<uint32_t>(std::min<uint64_t>(k.qkey_viol_cntr, UINT32_MAX));
  return absl::OkStatus();
}

absl::Status SessionServer::OnQueryGid(const wire::TableQueryReq& r,
                                       wire::QueryGidResp* out) {
  if (r.port_num != 1) return absl::InvalidArgumentError("no such port");
  if (r.index >= rnic_.gid_table().capacity()) {
    return absl::InvalidArgumentError("GID index beyond the table");
  }
  // An empty entry reads as the zero GID, as ibv_query_gid reports it.
  const std::optional<nic::Gid> g = rnic_.gid_table().Get(r.index);
  if (g.has_value()) std::memcpy(out->gid, g->data(), sizeof(out->gid));
  return absl::OkStatus();
}

absl::Status SessionServer::OnQueryGidTable(const wire::TableQueryReq& r,
                                            wire::QueryGidTableResp* out) {
  if (r.port_num != 1) return absl::InvalidArgumentError("no such port");
  const uint32_t len = rnic_.gid_table().capacity();
  uint32_t i = r.index;
  for (; i < len && out->count < wire::kGidBatch; ++i) {
    const std::optional<nic::Gid> g = rnic_.gid_table().Get(i);
    if (!g.has_value()) continue;
    wire::QueryGidTableResp::Entry& e = out->entries[out->count++];
    e.index = i;
    std::memcpy(e.gid, g->data(), sizeof(e.gid));
  }
  out->next_index = i;
  return absl::OkStatus();
}

absl::Status SessionServer::OnQueryPkey(const wire::TableQueryReq& r,
                                        wire::QueryPkeyResp* out) {
  if (r.port_num != 1) return absl::InvalidArgumentError("no such port");
  if (r.index >= rnic_.pkey_table().capacity()) {
    return absl::InvalidArgumentError("P_Key index beyond the table");
  }
  out->pkey = rnic_.pkey_table().Get(static_cast<uint16_t>(r.index));
  return absl::OkStatus();
}

absl::Status SessionServer::OnOpenAsync(Client& c, int fd,
                                        wire::OpenAsyncResp* out,
                                        int* ring_fd) {
  EventFd channel(fd);
  if (c.async_ring.valid()) {
    return absl::FailedPreconditionError("async events already open");
  }
  if (!IsEventFd(fd)) {
    return absl::InvalidArgumentError("async event fd is not an eventfd");
  }
  const int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) {
    return absl::ErrnoToStatus(errno, "async event fd flags");
  }
  absl::StatusOr<ShmRing> ring =
      ShmRing::Create("rocemu-async", sizeof(AsyncEventSlot), kAsyncEvents);
  if (!ring.ok()) return ring.status();
  c.async_ring = *std::move(ring);
  c.async_fd = std::move(channel);
  *ring_fd = c.async_ring.fd();
  out->capacity = c.async_ring.capacity();
  return absl::OkStatus();
}

absl::Status SessionServer::OnOpenDoorbells(Client& c,
                                            wire::OpenDoorbellsResp* out,
                                            int fds[3]) {
  if (c.doorbells.valid()) {
    return absl::FailedPreconditionError("doorbells already open");
  }
  absl::StatusOr<ShmRing> ring = ShmRing::Create(
      "rocemu-doorbells", sizeof(DoorbellSlot), kDoorbellEntries);
  if (!ring.ok()) return ring.status();
  // The client's own wake eventfd: a client that fills its counter can
  // only ever block itself.
  EventFd wake(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake.valid()) return absl::ErrnoToStatus(errno, "eventfd");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = c.id;
  if (epoll_ctl(wake_epoll_fd_, EPOLL_CTL_ADD, wake.fd(), &ev) != 0) {
    return absl::ErrnoToStatus(errno, "epoll_ctl wake");
  }
  c.doorbells = *std::move(ring);
  c.wake = std::move(wake);
  --unrung_clients_;
  fds[0] = c.doorbells.fd();
  fds[1] = wake_page_fd_;
  fds[2] = c.wake.fd();
  out->capacity = c.doorbells.capacity();
  return absl::OkStatus();
}

// --- disconnection -------------------------------------------------------

}  // namespace rocemu::verbs
