// The verbs library: control calls over the daemon's socket, data path
// over the shared-memory rings.
#include "verbs/rocemu_verbs.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "nic/async_event.h"
#include "nic/completion.h"
#include "verbs/ring_slots.h"
#include "verbs/shm_ring.h"
#include "verbs/wire_protocol.h"

namespace wire = rocemu::verbs::wire;
using rocemu::verbs::AsyncEventSlot;
using rocemu::verbs::CqeSlot;
using rocemu::verbs::RingResult;
using rocemu::verbs::RqSlot;
using rocemu::verbs::ShmRing;
using rocemu::verbs::SqSlot;

struct rocemu_context {
  int fd = -1;
  uint32_t seq = 0;
  uint32_t client_id = 0;
  char device_name[sizeof(wire::HelloResp::device_name)] = {};
  std::mutex mu;  // control path only
  std::vector<rocemu_buf*> bufs;
  // Async events: the daemon's ring and the eventfd it signals.
  ShmRing async_ring;
  int async_fd = -1;
  std::mutex async_mu;  // one consumer of the ring at a time
  // What event elements name (under mu).
  absl::flat_hash_map<uint32_t, rocemu_qp*> qps;
  absl::flat_hash_map<uint32_t, rocemu_cq*> cqs;
  absl::flat_hash_map<uint32_t, rocemu_srq*> srqs;
};

struct rocemu_device {
  std::string path;
  char name[sizeof(wire::HelloResp::device_name)];
};

struct rocemu_pd {
  rocemu_context* ctx;
  uint32_t handle;
};

struct rocemu_comp_channel {
  rocemu_context* ctx;
  int fd;
  std::vector<rocemu_cq*> cqs;
};

struct rocemu_cq {
  rocemu_context* ctx;
  uint32_t handle;
  void* cq_context;
  rocemu_comp_channel* channel;
  ShmRing ring;
  uint64_t seen_signals = 0;
  uint64_t events = 0;  // delivered by get_cq_event
  uint64_t acked = 0;
};

struct rocemu_qp {
  rocemu_context* ctx;
  rocemu_pd* pd;
  uint32_t qpn;
  int qp_type;
  int state;
  rocemu_qp_cap cap;
  ShmRing sq;
  ShmRing rq;
  rocemu_srq* srq;
};

struct rocemu_ah {
  rocemu_pd* pd;
  uint32_t handle;
};

struct rocemu_srq {
  rocemu_context* ctx;
  rocemu_pd* pd;
  uint32_t handle;
  void* srq_context;
  uint32_t max_sge;
  ShmRing ring;
};

namespace {

// Buffer bookkeeping kept beside the public struct.
struct BufImpl {
  rocemu_buf pub;
  int fd;
  size_t map_len;
};

BufImpl* ImplOf(rocemu_buf* b) { return reinterpret_cast<BufImpl*>(b); }

// One request/reply exchange. Returns 0 or an errno value.
int Transact(rocemu_context* ctx, wire::MsgType type, const void* body,
             size_t body_len, std::span<const int> send_fds, void* reply,
             size_t reply_len, std::span<int> recv_fds) {
  std::lock_guard<std::mutex> lock(ctx->mu);
  alignas(8) uint8_t buf[wire::kMaxMessage];
  const uint32_t seq = ++ctx->seq;
  const size_t len = wire::EncodeRequest(type, seq, body, body_len, buf);
  if (len == 0) return EINVAL;
  iovec iov{buf, len};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)] = {};
  if (!send_fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * send_fds.size());
    cmsghdr* cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int) * send_fds.size());
    std::memcpy(CMSG_DATA(cm), send_fds.data(), sizeof(int) * send_fds.size());
  }
  ssize_t n;
  do {
    n = sendmsg(ctx->fd, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(len)) return n < 0 ? errno : EIO;

  alignas(8) uint8_t rbuf[wire::kMaxMessage];
  iovec riov{rbuf, sizeof(rbuf)};
  msghdr rmsg{};
  rmsg.msg_iov = &riov;
  rmsg.msg_iovlen = 1;
  alignas(cmsghdr) char rcontrol[CMSG_SPACE(sizeof(int) * 4)];
  rmsg.msg_control = rcontrol;
  rmsg.msg_controllen = sizeof(rcontrol);
  do {
    n = recvmsg(ctx->fd, &rmsg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return n == 0 ? ECONNRESET : errno;
  size_t got = 0;
  for (cmsghdr* cm = CMSG_FIRSTHDR(&rmsg); cm != nullptr;
       cm = CMSG_NXTHDR(&rmsg, cm)) {
    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
      if (got < recv_fds.size()) {
        recv_fds[got++] = fd;
      } else {
        close(fd);
      }
    }
  }
  auto fail = [&](int err) {
    for (size_t i = 0; i < got; ++i) close(recv_fds[i]);
    return err;
  };
  absl::StatusOr<wire::DecodedReply> r =
      wire::DecodeReply({rbuf, static_cast<size_t>(n)}, type, seq);
  if (!r.ok()) return fail(EPROTO);
  if (r->error != 0) return fail(r->error);
  if (got != recv_fds.size() || r->body.size() != reply_len) {
    return fail(EPROTO);
  }
  if (reply_len != 0) std::memcpy(reply, r->body.data(), reply_len);
  return 0;
}

template <typename Req, typename Resp>
int Call(rocemu_context* ctx, wire::MsgType type, const Req& req, Resp* resp,
         std::span<const int> send_fds = {}, std::span<int> recv_fds = {}) {
  return Transact(ctx, type, &req, std::is_empty_v<Req> ? 0 : sizeof(Req),
                  send_fds, resp, resp == nullptr ? 0 : sizeof(Resp), recv_fds);
}

int Handle(rocemu_context* ctx, wire::MsgType type, uint32_t handle) {
  const wire::HandleReq req{handle, 0};
  return Call<wire::HandleReq, wire::Empty>(ctx, type, req, nullptr);
}

void ToWireAh(const rocemu_ah_attr& a, wire::WireAhAttr* w) {
  std::memcpy(w->dgid, a.dgid, sizeof(w->dgid));
  std::memcpy(w->dmac, a.dmac, sizeof(w->dmac));
  w->sgid_index = a.sgid_index;
  w->traffic_class = a.traffic_class;
  w->flow_label = a.flow_label;
  w->hop_limit = a.hop_limit;
  w->sl = a.sl;
  w->port_num = a.port_num;
}

void FromWireAh(const wire::WireAhAttr& w, rocemu_ah_attr* a) {
  std::memcpy(a->dgid, w.dgid, sizeof(w.dgid));
  std::memcpy(a->dmac, w.dmac, sizeof(w.dmac));
  a->sgid_index = w.sgid_index;
  a->traffic_class = w.traffic_class;
  a->flow_label = w.flow_label;
  a->hop_limit = w.hop_limit;
  a->sl = w.sl;
  a->port_num = w.port_num;
}

// The daemon answers EAGAIN while the neighbour of an address vector is
// being resolved (ARP/ND take milliseconds): retry transparently, as the
// kernel's ibv_modify_qp blocks on neighbour resolution, and give up with
// EHOSTUNREACH after kResolveTimeoutMs.
constexpr int kResolveTimeoutMs = 3000;
int64_t MonotonicMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1'000'000;
}
template <typename F>
int RetryWhileResolving(F&& call) {
  const int64_t give_up = MonotonicMs() + kResolveTimeoutMs;
  for (;;) {
    const int err = call();
    if (err != EAGAIN) return err;
    if (MonotonicMs() >= give_up) return EHOSTUNREACH;
    usleep(1000);
  }
}

template <typename T>
T* Fail(int err) {
  errno = err;
  return nullptr;
}

bool OpcodeAllowed(int qp_type, int op) {
  switch (op) {
    case ROCEMU_WR_SEND:
    case ROCEMU_WR_SEND_WITH_IMM:
      return true;
    case ROCEMU_WR_RDMA_WRITE:
    case ROCEMU_WR_RDMA_WRITE_WITH_IMM:
      return qp_type != ROCEMU_QPT_UD;
    case ROCEMU_WR_RDMA_READ:
    case ROCEMU_WR_ATOMIC_CMP_AND_SWP:
    case ROCEMU_WR_ATOMIC_FETCH_AND_ADD:
    case ROCEMU_WR_SEND_WITH_INV:
      return qp_type == ROCEMU_QPT_RC;
    default:
      return false;
  }
}

}  // namespace

namespace {

// Connects and says Hello. A probe (device listing) waits at most a second
// for a daemon that does not answer and does not open async events.
std::unique_ptr<rocemu_context> Connect(const char* socket_path, bool probe,
                                        int* err) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (std::strlen(socket_path) >= sizeof(addr.sun_path)) {
    *err = ENAMETOOLONG;
    return nullptr;
  }
  std::strcpy(addr.sun_path, socket_path);
  auto ctx = std::make_unique<rocemu_context>();
  ctx->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (ctx->fd < 0) {
    *err = errno;
    return nullptr;
  }
  if (probe) {
    const timeval tv{1, 0};
    setsockopt(ctx->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(ctx->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  }
  if (connect(ctx->fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    *err = errno;
    close(ctx->fd);
    return nullptr;
  }
  wire::HelloReq req{};
  req.min_version = wire::kVersion;
  req.max_version = wire::kVersion;
  req.capabilities = wire::kCapShmBuffers | wire::kCapCompChannel |
                     wire::kCapProcessMemory | wire::kCapSrq |
                     wire::kCapAsyncEvents;
  std::strncpy(req.client_name, program_invocation_short_name,
               sizeof(req.client_name) - 1);
  wire::HelloResp resp{};
  *err = Call(ctx.get(), wire::MsgType::kHello, req, &resp);
  if (*err == 0 && (resp.sq_slot_size != sizeof(SqSlot) ||
                    resp.rq_slot_size != sizeof(RqSlot) ||
                    resp.cqe_slot_size != sizeof(CqeSlot))) {
    *err = EPROTO;
  }
  if (*err == 0 && !probe) {
    // Async events are always on: the ring costs the daemon nothing until
    // an event comes, and an application may ask for them at any time.
    ctx->async_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (ctx->async_fd < 0) {
      *err = errno;
    } else {
      wire::OpenAsyncResp ar{};
      int ring_fd = -1;
      *err = Call(ctx.get(), wire::MsgType::kOpenAsync, wire::Empty{}, &ar,
                  std::span<const int>(&ctx->async_fd, 1), {&ring_fd, 1});
      if (*err == 0) {
        absl::StatusOr<ShmRing> ring =
            ShmRing::Attach(ring_fd, sizeof(AsyncEventSlot), ar.capacity);
        if (ring.ok()) {
          ring->CloseFd();
          ctx->async_ring = *std::move(ring);
        } else {
          *err = EPROTO;
        }
      }
    }
  }
  if (*err != 0) {
    close(ctx->fd);
    if (ctx->async_fd >= 0) close(ctx->async_fd);
    return nullptr;
  }
  ctx->client_id = resp.client_id;
  std::memcpy(ctx->device_name, resp.device_name, sizeof(ctx->device_name));
  ctx->device_name[sizeof(ctx->device_name) - 1] = '\0';
  return ctx;
}

const char* DefaultSocket() {
  const char* p = std::getenv("ROCEMU_VERBS_SOCKET");
  return p != nullptr ? p : "/run/rocemu/verbs.sock";
}

// Writes a chain of receive WRs into a QP's or an SRQ's receive ring, as
// ibv_post_recv and ibv_post_srq_recv do: EINVAL for too many SGEs, ENOMEM
// for a full ring, *bad_wr naming the first WR not posted.
int PostRecvChain(ShmRing& ring, uint32_t max_sge, rocemu_recv_wr* wr,
                  rocemu_recv_wr** bad_wr) {
  for (; wr != nullptr; wr = wr->next) {
    if (wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > max_sge) {
      *bad_wr = wr;
      return EINVAL;
    }
    auto* s = static_cast<RqSlot*>(ring.ProducerSlot());
    if (s == nullptr) {
      *bad_wr = wr;
      return ENOMEM;
    }
    s->wr_id = wr->wr_id;
    s->num_sge = static_cast<uint32_t>(wr->num_sge);
    for (int i = 0; i < wr->num_sge; ++i) {
      s->sge[i] = {wr->sg_list[i].addr, wr->sg_list[i].length,
                   wr->sg_list[i].lkey};
    }
    ring.Publish();
  }
  return 0;
}

}  // namespace

extern "C" {

rocemu_context* rocemu_open_device(const char* socket_path) {
  if (socket_path == nullptr) socket_path = DefaultSocket();
  int err = 0;
  std::unique_ptr<rocemu_context> ctx = Connect(socket_path, false, &err);
  if (ctx == nullptr) return Fail<rocemu_context>(err);
  return ctx.release();
}

rocemu_device** rocemu_get_device_list(int* num_devices) {
  std::vector<std::string> paths;
  if (const char* one = std::getenv("ROCEMU_VERBS_SOCKET"); one != nullptr) {
    paths.emplace_back(one);
  } else {
    const char* dir = std::getenv("ROCEMU_VERBS_DIR");
    std::string d = dir != nullptr ? dir : "/run/rocemu";
    if (!d.empty() && d.back() != '/') d.push_back('/');
    DIR* dp = opendir(d.c_str());
    if (dp != nullptr) {
      while (const dirent* e = readdir(dp)) {
        const std::string p = d + e->d_name;
        struct stat st;
        if (lstat(p.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
          paths.push_back(p);
        }
      }
      closedir(dp);
    }
    std::sort(paths.begin(), paths.end());
  }
  std::vector<rocemu_device*> found;
  for (const std::string& p : paths) {
    int err = 0;
    // Stale sockets (no daemon behind them) are not devices.
    std::unique_ptr<rocemu_context> ctx = Connect(p.c_str(), true, &err);
    if (ctx == nullptr) continue;
    auto* dev = new rocemu_device{p, {}};
    std::memcpy(dev->name, ctx->device_name, sizeof(dev->name));
    close(ctx->fd);
    found.push_back(dev);
  }
  auto** list = new rocemu_device*[found.size() + 1];
  std::copy(found.begin(), found.end(), list);
  list[found.size()] = nullptr;
  if (num_devices != nullptr) *num_devices = static_cast<int>(found.size());
  return list;
}

void rocemu_free_device_list(rocemu_device** list) {
  if (list == nullptr) return;
  for (rocemu_device** d = list; *d != nullptr; ++d) delete *d;
  delete[] list;
}

const char* rocemu_get_device_name(const rocemu_device* device) {
  return device->name;
}

const char* rocemu_get_device_path(const rocemu_device* device) {
  return device->path.c_str();
}

rocemu_context* rocemu_open_device_from(const rocemu_device* device) {
  return rocemu_open_device(device->path.c_str());
}

int rocemu_close_device(rocemu_context* ctx) {
  if (ctx == nullptr) return EINVAL;
  // The daemon frees whatever the application did not: closing the socket
  // is a disconnection.
  close(ctx->fd);
  if (ctx->async_fd >= 0) close(ctx->async_fd);
  for (rocemu_buf* b : ctx->bufs) {
    BufImpl* impl = ImplOf(b);
    if (impl->pub.addr != nullptr) {
      munmap(impl->pub.addr, impl->map_len);
      close(impl->fd);
    }
    delete impl;
  }
  delete ctx;
  return 0;
}

uint32_t rocemu_client_id(const rocemu_context* ctx) { return ctx->client_id; }

const char* rocemu_device_name(const rocemu_context* ctx) {
  return ctx->device_name;
}

int rocemu_query_port(rocemu_context* ctx, uint8_t port_num,
                      rocemu_port_attr* attr) {
  wire::QueryPortReq req{};
  req.port_num = port_num;
  wire::QueryPortResp resp{};
  const int err = Call(ctx, wire::MsgType::kQueryPort, req, &resp);
  if (err != 0) return err;
  *attr = rocemu_port_attr{};
  attr->state = resp.state;
  attr->active_mtu = resp.active_mtu;
  std::memcpy(attr->gid, resp.gid, sizeof(attr->gid));
  std::memcpy(attr->mac, resp.mac, sizeof(attr->mac));
  attr->max_mtu = resp.max_mtu;
  attr->gid_tbl_len = resp.gid_tbl_len;
  attr->port_cap_flags = resp.port_cap_flags;
  attr->max_msg_sz = resp.max_msg_sz;
  attr->bad_pkey_cntr = resp.bad_pkey_cntr;
  attr->qkey_viol_cntr = resp.qkey_viol_cntr;
  attr->pkey_tbl_len = resp.pkey_tbl_len;
  attr->max_vl_num = resp.max_vl_num;
  attr->active_width = resp.active_width;
  attr->active_speed = resp.active_speed;
  attr->phys_state = resp.phys_state;
  attr->link_layer = resp.link_layer;
  return 0;
}

int rocemu_query_device(rocemu_context* ctx, rocemu_device_attr* attr) {
  wire::QueryDeviceResp r{};
  const int err = Call(ctx, wire::MsgType::kQueryDevice, wire::Empty{}, &r);
  if (err != 0) return err;
  *attr = rocemu_device_attr{};
  std::memcpy(attr->fw_ver, r.fw_ver, sizeof(attr->fw_ver));
  attr->fw_ver[sizeof(attr->fw_ver) - 1] = '\0';
  attr->node_guid = r.node_guid;
  attr->sys_image_guid = r.sys_image_guid;
  attr->max_mr_size = r.max_mr_size;
  attr->page_size_cap = r.page_size_cap;
  attr->vendor_id = r.vendor_id;
  attr->vendor_part_id = r.vendor_part_id;
  attr->hw_ver = r.hw_ver;
  // ibv_device_attr's int fields: the daemon's limits fit (checked by
  // DeviceAttr::Validate), clamped anyway.
  auto i = [](uint32_t v) {
    return static_cast<int>(std::min<uint32_t>(v, INT32_MAX));
  };
  attr->max_qp = i(r.max_qp);
  attr->max_qp_wr = i(r.max_qp_wr);
  attr->device_cap_flags = r.device_cap_flags;
  attr->max_sge = i(r.max_sge);
  attr->max_sge_rd = i(r.max_sge_rd);
  attr->max_cq = i(r.max_cq);
  attr->max_cqe = i(r.max_cqe);
  attr->max_mr = i(r.max_mr);
  attr->max_pd = i(r.max_pd);
  attr->max_qp_rd_atom = i(r.max_qp_rd_atom);
  attr->max_res_rd_atom = i(r.max_res_rd_atom);
  attr->max_qp_init_rd_atom = i(r.max_qp_init_rd_atom);
  attr->atomic_cap = i(r.atomic_cap);
  attr->max_ah = i(r.max_ah);
  attr->max_srq = i(r.max_srq);
  attr->max_srq_wr = i(r.max_srq_wr);
  attr->max_srq_sge = i(r.max_srq_sge);
  attr->max_pkeys = r.max_pkeys;
  attr->local_ca_ack_delay = r.local_ca_ack_delay;
  attr->phys_port_cnt = r.phys_port_cnt;
  attr->max_inline_data = r.max_inline_data;
  attr->max_msg_sz = r.max_msg_sz;
  return 0;
}

int rocemu_query_gid(rocemu_context* ctx, uint8_t port_num, int index,
                     uint8_t gid[16]) {
  if (index < 0) return EINVAL;
  wire::TableQueryReq req{};
  req.port_num = port_num;
  req.index = static_cast<uint32_t>(index);
  wire::QueryGidResp r{};
  const int err = Call(ctx, wire::MsgType::kQueryGid, req, &r);
  if (err == 0) std::memcpy(gid, r.gid, sizeof(r.gid));
  return err;
}

int rocemu_query_pkey(rocemu_context* ctx, uint8_t port_num, int index,
                      uint16_t* pkey) {
  if (index < 0) return EINVAL;
  wire::TableQueryReq req{};
  req.port_num = port_num;
  req.index = static_cast<uint32_t>(index);
  wire::QueryPkeyResp r{};
  const int err = Call(ctx, wire::MsgType::kQueryPkey, req, &r);
  if (err == 0) *pkey = htons(r.pkey);
  return err;
}

rocemu_pd* rocemu_alloc_pd(rocemu_context* ctx) {
  wire::HandleResp resp{};
  const int err = Call(ctx, wire::MsgType::kAllocPd, wire::Empty{}, &resp);
  if (err != 0) return Fail<rocemu_pd>(err);
  return new rocemu_pd{ctx, resp.handle};
}

int rocemu_dealloc_pd(rocemu_pd* pd) {
  const int err = Handle(pd->ctx, wire::MsgType::kDeallocPd, pd->handle);
  if (err == 0) delete pd;
  return err;
}

rocemu_buf* rocemu_alloc_buf(rocemu_context* ctx, size_t length) {
  if (length == 0) return Fail<rocemu_buf>(EINVAL);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t map_len = (length + page - 1) / page * page;
  const int fd = memfd_create("rocemu-buf", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return nullptr;
  // Sealed so the daemon's mapping can never lose its pages under it.
  if (ftruncate(fd, static_cast<off_t>(map_len)) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    const int e = errno;
    close(fd);
    return Fail<rocemu_buf>(e);
  }
  void* p = mmap(nullptr, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    const int e = errno;
    close(fd);
    return Fail<rocemu_buf>(e);
  }
  auto* impl = new BufImpl{{p, length}, fd, map_len};
  std::lock_guard<std::mutex> lock(ctx->mu);
  ctx->bufs.push_back(&impl->pub);
  return &impl->pub;
}

int rocemu_free_buf(rocemu_buf* buf) {
  // The bookkeeping stays in the context's list (freed with it); the daemon
  // keeps its own mapping for regions still registered in the buffer.
  BufImpl* impl = ImplOf(buf);
  if (impl->pub.addr == nullptr) return EINVAL;
  munmap(impl->pub.addr, impl->map_len);
  close(impl->fd);
  impl->fd = -1;
  impl->pub.addr = nullptr;
  impl->pub.length = 0;
  return 0;
}

rocemu_mr* rocemu_reg_mr(rocemu_pd* pd, void* addr, size_t length, int access) {
  rocemu_context* ctx = pd->ctx;
  const auto a = reinterpret_cast<uintptr_t>(addr);
  BufImpl* found = nullptr;
  {
    std::lock_guard<std::mutex> lock(ctx->mu);
    for (rocemu_buf* b : ctx->bufs) {
      const auto base = reinterpret_cast<uintptr_t>(b->addr);
      if (b->addr != nullptr && a >= base && length <= b->length &&
          a - base <= b->length - length) {
        found = ImplOf(b);
        break;
      }
    }
  }
  if (length == 0) return Fail<rocemu_mr>(EINVAL);
  wire::RegMrReq req{};
  req.pd = pd->handle;
  req.access = static_cast<uint32_t>(access);
  req.iova = a;
  req.length = length;
  // Inside a library buffer: the daemon maps the memfd. Anywhere else: no
  // fd, the daemon reaches this process's memory with process_vm_*.
  req.offset =
      found != nullptr ? a - reinterpret_cast<uintptr_t>(found->pub.addr) : 0;
  wire::RegMrResp resp{};
  const int fd = found != nullptr ? found->fd : -1;
  const int err = Call(ctx, wire::MsgType::kRegMr, req, &resp,
                       std::span<const int>(&fd, found != nullptr ? 1u : 0u));
  if (err != 0) return Fail<rocemu_mr>(err);
  return new rocemu_mr{pd, addr, length, resp.lkey, resp.rkey};
}

int rocemu_dereg_mr(rocemu_mr* mr) {
  const int err = Handle(mr->pd->ctx, wire::MsgType::kDeregMr, mr->lkey);
  if (err == 0) delete mr;
  return err;
}

rocemu_comp_channel* rocemu_create_comp_channel(rocemu_context* ctx) {
  const int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) return nullptr;
  return new rocemu_comp_channel{ctx, fd, {}};
}

int rocemu_destroy_comp_channel(rocemu_comp_channel* ch) {
  if (!ch->cqs.empty()) return EBUSY;
  close(ch->fd);
  delete ch;
  return 0;
}

int rocemu_comp_channel_fd(const rocemu_comp_channel* ch) { return ch->fd; }

rocemu_cq* rocemu_create_cq(rocemu_context* ctx, int cqe, void* cq_context,
                            rocemu_comp_channel* channel, int comp_vector) {
  (void)comp_vector;  // one polling thread in the daemon
  if (cqe <= 0) return Fail<rocemu_cq>(EINVAL);
  wire::CreateCqReq req{static_cast<uint32_t>(cqe),
                        channel != nullptr ? wire::kCreateCqWithChannel : 0u};
  wire::CreateCqResp resp{};
  int ring_fd = -1;
  const int ch_fd = channel != nullptr ? channel->fd : -1;
  const int err =
      Call(ctx, wire::MsgType::kCreateCq, req, &resp,
           std::span<const int>(&ch_fd, channel != nullptr ? 1u : 0u),
           {&ring_fd, 1});
  if (err != 0) return Fail<rocemu_cq>(err);
  absl::StatusOr<ShmRing> ring = ShmRing::Attach(
      ring_fd, sizeof(CqeSlot), std::bit_ceil(static_cast<uint32_t>(cqe)));
  if (!ring.ok()) {
    Handle(ctx, wire::MsgType::kDestroyCq, resp.cq);
    return Fail<rocemu_cq>(EPROTO);
  }
  ring->CloseFd();
  auto* cq = new rocemu_cq{ctx, resp.cq, cq_context, channel, *std::move(ring)};
  std::lock_guard<std::mutex> lock(ctx->mu);
  if (channel != nullptr) channel->cqs.push_back(cq);
  ctx->cqs[cq->handle] = cq;
  return cq;
}

int rocemu_destroy_cq(rocemu_cq* cq) {
  const int err = Handle(cq->ctx, wire::MsgType::kDestroyCq, cq->handle);
  if (err != 0) return err;
  {
    std::lock_guard<std::mutex> lock(cq->ctx->mu);
    if (cq->channel != nullptr) {
      auto& v = cq->channel->cqs;
      v.erase(std::remove(v.begin(), v.end(), cq), v.end());
    }
    cq->ctx->cqs.erase(cq->handle);
  }
  delete cq;
  return 0;
}

int rocemu_req_notify_cq(rocemu_cq* cq, int solicited_only) {
  if (cq->channel == nullptr) return EINVAL;
  cq->ring.Arm(solicited_only ? rocemu::verbs::ArmMode::kSolicited
                              : rocemu::verbs::ArmMode::kNext);
  return 0;
}

int rocemu_get_cq_event(rocemu_comp_channel* ch, rocemu_cq** out,
                        void** cq_context, int timeout_ms) {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(ch->ctx->mu);
      for (rocemu_cq* cq : ch->cqs) {
        const uint64_t s = cq->ring.signals();
        if (s != cq->seen_signals) {
          ++cq->seen_signals;
          ++cq->events;
          *out = cq;
          *cq_context = cq->cq_context;
          return 0;
        }
      }
    }
    pollfd p{ch->fd, POLLIN, 0};
    const int n = poll(&p, 1, timeout_ms);
    if (n == 0) return ETIMEDOUT;
    if (n < 0) return errno;
    uint64_t v;
    if (read(ch->fd, &v, sizeof(v)) < 0 && errno != EAGAIN) return errno;
  }
}

void rocemu_ack_cq_events(rocemu_cq* cq, unsigned int nevents) {
  cq->acked += nevents;
}

int rocemu_poll_cq(rocemu_cq* cq, int num, rocemu_wc* wc) {
  int n = 0;
  for (; n < num; ++n) {
    const void* s = cq->ring.ConsumerSlot();
    if (s == nullptr) {
      if (cq->ring.last_result() == RingResult::kCorrupt) return -1;
      break;
    }
    CqeSlot e;
    std::memcpy(&e, s, sizeof(e));
    cq->ring.Release();
    rocemu_wc& w = wc[n];
    w.wr_id = e.wr_id;
    w.status = e.status;
    w.opcode = e.opcode;
    w.vendor_err = e.vendor_err;
    w.byte_len = e.byte_len;
    w.imm_data = (e.wc_flags & ROCEMU_WC_WITH_INV) != 0 ? e.invalidated_rkey
                                                        : htonl(e.imm_data);
    w.qp_num = e.qp_num;
    w.src_qp = e.src_qp;
    w.wc_flags = e.wc_flags;
    w.pkey_index = e.pkey_index;
    w.slid = e.slid;
    w.sl = e.sl;
    w.dlid_path_bits = e.dlid_path_bits;
  }
  return n;
}

rocemu_qp* rocemu_create_qp(rocemu_pd* pd, rocemu_qp_init_attr* attr) {
  if (attr->send_cq == nullptr || attr->recv_cq == nullptr) {
    return Fail<rocemu_qp>(EINVAL);
  }
  wire::CreateQpReq req{};
  req.pd = pd->handle;
  req.qp_type = static_cast<uint8_t>(attr->qp_type);
  req.sq_sig_all = attr->sq_sig_all != 0;
  req.send_cq = attr->send_cq->handle;
  req.recv_cq = attr->recv_cq->handle;
  if (attr->srq != nullptr) {
    req.flags = wire::kCreateQpWithSrq;
    req.srq = attr->srq->handle;
  }
  req.cap = {attr->cap.max_send_wr, attr->cap.max_recv_wr,
             attr->cap.max_send_sge, attr->cap.max_recv_sge,
             attr->cap.max_inline_data};
  wire::CreateQpResp resp{};
  int fds[2] = {-1, -1};
  const int err =
      Call(pd->ctx, wire::MsgType::kCreateQp, req, &resp, {}, {fds, 2});
  if (err != 0) return Fail<rocemu_qp>(err);
  // The capabilities granted (ibv_create_qp writes them back).
  attr->cap = {resp.cap.max_send_wr, resp.cap.max_recv_wr,
               resp.cap.max_send_sge, resp.cap.max_recv_sge,
               resp.cap.max_inline_data};
  absl::StatusOr<ShmRing> sq = ShmRing::Attach(
      fds[0], sizeof(SqSlot), std::bit_ceil(attr->cap.max_send_wr));
  absl::StatusOr<ShmRing> rq =
      ShmRing::Attach(fds[1], sizeof(RqSlot),
                      std::bit_ceil(std::max(attr->cap.max_recv_wr, 1u)));
  if (!sq.ok() || !rq.ok()) {
    Handle(pd->ctx, wire::MsgType::kDestroyQp, resp.qpn);
    return Fail<rocemu_qp>(EPROTO);
  }
  sq->CloseFd();
  rq->CloseFd();
  auto* qp =
      new rocemu_qp{pd->ctx,          pd,        resp.qpn,       attr->qp_type,
                    ROCEMU_QPS_RESET, attr->cap, *std::move(sq), *std::move(rq),
                    attr->srq};
  std::lock_guard<std::mutex> lock(pd->ctx->mu);
  pd->ctx->qps[qp->qpn] = qp;
  return qp;
}

int rocemu_modify_qp(rocemu_qp* qp, rocemu_qp_attr* attr, int attr_mask) {
  wire::ModifyQpReq req{};
  req.qpn = qp->qpn;
  req.attr_mask = static_cast<uint32_t>(attr_mask);
  wire::WireQpAttr& w = req.attr;
  w.qp_state = static_cast<uint8_t>(attr->qp_state);
  w.cur_qp_state = static_cast<uint8_t>(attr->cur_qp_state);
  w.path_mtu = static_cast<uint8_t>(attr->path_mtu);
  w.qkey = attr->qkey;
  w.rq_psn = attr->rq_psn;
  w.sq_psn = attr->sq_psn;
  w.dest_qp_num = attr->dest_qp_num;
  w.qp_access_flags = attr->qp_access_flags;
  w.cap = {attr->cap.max_send_wr, attr->cap.max_recv_wr, attr->cap.max_send_sge,
           attr->cap.max_recv_sge, attr->cap.max_inline_data};
  ToWireAh(attr->ah_attr, &w.ah_attr);
  w.pkey_index = attr->pkey_index;
  w.max_rd_atomic = attr->max_rd_atomic;
  w.max_dest_rd_atomic = attr->max_dest_rd_atomic;
  w.min_rnr_timer = attr->min_rnr_timer;
  w.port_num = attr->port_num;
  w.timeout = attr->timeout;
  w.retry_cnt = attr->retry_cnt;
  w.rnr_retry = attr->rnr_retry;
  const int err = RetryWhileResolving([&] {
    return Call<wire::ModifyQpReq, wire::Empty>(
        qp->ctx, wire::MsgType::kModifyQp, req, nullptr);
  });
  if (err == 0 && (attr_mask & ROCEMU_QP_STATE) != 0)
    qp->state = attr->qp_state;
  return err;
}

int rocemu_query_qp(rocemu_qp* qp, rocemu_qp_attr* attr, int attr_mask) {
  (void)attr_mask;  // everything is returned
  const wire::HandleReq req{qp->qpn, 0};
  wire::QueryQpResp resp{};
  const int err = Call(qp->ctx, wire::MsgType::kQueryQp, req, &resp);
  if (err != 0) return err;
  const wire::WireQpAttr& w = resp.attr;
  *attr = rocemu_qp_attr{};
  attr->qp_state = w.qp_state;
  attr->cur_qp_state = w.cur_qp_state;
  attr->path_mtu = w.path_mtu;
  attr->qkey = w.qkey;
  attr->rq_psn = w.rq_psn;
  attr->sq_psn = w.sq_psn;
  attr->dest_qp_num = w.dest_qp_num;
  attr->qp_access_flags = w.qp_access_flags;
  attr->cap = {w.cap.max_send_wr, w.cap.max_recv_wr, w.cap.max_send_sge,
               w.cap.max_recv_sge, w.cap.max_inline_data};
  FromWireAh(w.ah_attr, &attr->ah_attr);
  attr->pkey_index = w.pkey_index;
  attr->max_rd_atomic = w.max_rd_atomic;
  attr->max_dest_rd_atomic = w.max_dest_rd_atomic;
  attr->min_rnr_timer = w.min_rnr_timer;
  attr->port_num = w.port_num;
  attr->timeout = w.timeout;
  attr->retry_cnt = w.retry_cnt;
  attr->rnr_retry = w.rnr_retry;
  return 0;
}

int rocemu_destroy_qp(rocemu_qp* qp) {
  const int err = Handle(qp->ctx, wire::MsgType::kDestroyQp, qp->qpn);
  if (err != 0) return err;
  {
    std::lock_guard<std::mutex> lock(qp->ctx->mu);
    qp->ctx->qps.erase(qp->qpn);
  }
  delete qp;
  return 0;
}

uint32_t rocemu_qp_num(const rocemu_qp* qp) { return qp->qpn; }

int rocemu_post_send(rocemu_qp* qp, rocemu_send_wr* wr,
                     rocemu_send_wr** bad_wr) {
  if (qp->state == ROCEMU_QPS_RESET || qp->state == ROCEMU_QPS_INIT ||
      qp->state == ROCEMU_QPS_RTR) {
    *bad_wr = wr;
    return EINVAL;
  }
  for (; wr != nullptr; wr = wr->next) {
    const bool inl = (wr->send_flags & ROCEMU_SEND_INLINE) != 0;
    if (!OpcodeAllowed(qp->qp_type, wr->opcode) || wr->num_sge < 0 ||
        static_cast<uint32_t>(wr->num_sge) > qp->cap.max_send_sge) {
      *bad_wr = wr;
      return EINVAL;
    }
    uint64_t inline_len = 0;
    if (inl) {
      for (int i = 0; i < wr->num_sge; ++i) inline_len += wr->sg_list[i].length;
      if (inline_len > qp->cap.max_inline_data ||
          inline_len > rocemu::nic::kMaxInlineData) {
        *bad_wr = wr;
        return EINVAL;
      }
    }
    auto* s = static_cast<SqSlot*>(qp->sq.ProducerSlot());
    if (s == nullptr) {
      *bad_wr = wr;
      return ENOMEM;
    }
    s->wr_id = wr->wr_id;
    s->opcode = static_cast<uint8_t>(wr->opcode);
    s->send_flags = wr->send_flags;
    s->imm_data = ntohl(wr->imm_data);
    s->invalidate_rkey = wr->invalidate_rkey;
    if (wr->opcode == ROCEMU_WR_ATOMIC_CMP_AND_SWP ||
        wr->opcode == ROCEMU_WR_ATOMIC_FETCH_AND_ADD) {
      s->remote_addr = wr->wr.atomic.remote_addr;
      s->rkey = wr->wr.atomic.rkey;
      s->compare_add = wr->wr.atomic.compare_add;
      s->swap = wr->wr.atomic.swap;
    } else if (qp->qp_type == ROCEMU_QPT_UD) {
      s->ah = wr->wr.ud.ah != nullptr ? wr->wr.ud.ah->handle : 0;
      s->remote_qpn = wr->wr.ud.remote_qpn;
      s->remote_qkey = wr->wr.ud.remote_qkey;
    } else {
      s->remote_addr = wr->wr.rdma.remote_addr;
      s->rkey = wr->wr.rdma.rkey;
    }
    if (inl) {
      // The application's memory is in this process: gather it now, the
      // daemon never sees these addresses.
      uint32_t off = 0;
      for (int i = 0; i < wr->num_sge; ++i) {
        std::memcpy(s->inline_data + off,
                    reinterpret_cast<const void*>(wr->sg_list[i].addr),
                    wr->sg_list[i].length);
        off += wr->sg_list[i].length;
      }
      s->inline_len = off;
      s->num_sge = 0;
    } else {
      s->inline_len = 0;
      s->num_sge = static_cast<uint8_t>(wr->num_sge);
      for (int i = 0; i < wr->num_sge; ++i) {
        s->sge[i] = {wr->sg_list[i].addr, wr->sg_list[i].length,
                     wr->sg_list[i].lkey};
      }
    }
    qp->sq.Publish();
  }
  return 0;
}

int rocemu_post_recv(rocemu_qp* qp, rocemu_recv_wr* wr,
                     rocemu_recv_wr** bad_wr) {
  // A QP on an SRQ takes its receives from there (ibv_post_recv: EINVAL).
  if (qp->state == ROCEMU_QPS_RESET || qp->srq != nullptr) {
    *bad_wr = wr;
    return EINVAL;
  }
  return PostRecvChain(qp->rq, qp->cap.max_recv_sge, wr, bad_wr);
}

rocemu_ah* rocemu_create_ah(rocemu_pd* pd, rocemu_ah_attr* attr) {
  wire::CreateAhReq req{};
  req.pd = pd->handle;
  ToWireAh(*attr, &req.attr);
  wire::HandleResp resp{};
  const int err = RetryWhileResolving(
      [&] { return Call(pd->ctx, wire::MsgType::kCreateAh, req, &resp); });
  if (err != 0) return Fail<rocemu_ah>(err);
  return new rocemu_ah{pd, resp.handle};
}

int rocemu_destroy_ah(rocemu_ah* ah) {
  const int err = Handle(ah->pd->ctx, wire::MsgType::kDestroyAh, ah->handle);
  if (err == 0) delete ah;
  return err;
}

rocemu_srq* rocemu_create_srq(rocemu_pd* pd, rocemu_srq_init_attr* attr) {
  wire::CreateSrqReq req{};
  req.pd = pd->handle;
  req.attr = {attr->attr.max_wr, attr->attr.max_sge, attr->attr.srq_limit};
  wire::CreateSrqResp resp{};
  int ring_fd = -1;
  const int err =
      Call(pd->ctx, wire::MsgType::kCreateSrq, req, &resp, {}, {&ring_fd, 1});
  if (err != 0) return Fail<rocemu_srq>(err);
  absl::StatusOr<ShmRing> ring =
      ShmRing::Attach(ring_fd, sizeof(RqSlot), std::bit_ceil(resp.attr.max_wr));
  if (!ring.ok()) {
    Handle(pd->ctx, wire::MsgType::kDestroySrq, resp.srq);
    return Fail<rocemu_srq>(EPROTO);
  }
  ring->CloseFd();
  attr->attr = {resp.attr.max_wr, resp.attr.max_sge, resp.attr.srq_limit};
  auto* srq = new rocemu_srq{pd->ctx,           pd,
                             resp.srq,          attr->srq_context,
                             resp.attr.max_sge, *std::move(ring)};
  std::lock_guard<std::mutex> lock(pd->ctx->mu);
  pd->ctx->srqs[srq->handle] = srq;
  return srq;
}

int rocemu_modify_srq(rocemu_srq* srq, rocemu_srq_attr* attr, int attr_mask) {
  wire::ModifySrqReq req{};
  req.srq = srq->handle;
  req.attr_mask = static_cast<uint32_t>(attr_mask);
  req.attr = {attr->max_wr, attr->max_sge, attr->srq_limit};
  return Call<wire::ModifySrqReq, wire::Empty>(
      srq->ctx, wire::MsgType::kModifySrq, req, nullptr);
}

int rocemu_query_srq(rocemu_srq* srq, rocemu_srq_attr* attr) {
  const wire::HandleReq req{srq->handle, 0};
  wire::QuerySrqResp r{};
  const int err = Call(srq->ctx, wire::MsgType::kQuerySrq, req, &r);
  if (err == 0) *attr = {r.attr.max_wr, r.attr.max_sge, r.attr.srq_limit};
  return err;
}

int rocemu_destroy_srq(rocemu_srq* srq) {
  const int err = Handle(srq->ctx, wire::MsgType::kDestroySrq, srq->handle);
  if (err != 0) return err;
  {
    std::lock_guard<std::mutex> lock(srq->ctx->mu);
    srq->ctx->srqs.erase(srq->handle);
  }
  delete srq;
  return 0;
}

int rocemu_post_srq_recv(rocemu_srq* srq, rocemu_recv_wr* wr,
                         rocemu_recv_wr** bad_wr) {
  return PostRecvChain(srq->ring, srq->max_sge, wr, bad_wr);
}

int rocemu_async_fd(const rocemu_context* ctx) { return ctx->async_fd; }

int rocemu_get_async_event(rocemu_context* ctx, rocemu_async_event* event,
                           int timeout_ms) {
  for (;;) {
    // Clear the eventfd before looking at the ring: an event published
    // after the look signals again, so the poll below cannot miss it.
    uint64_t v;
    (void)!read(ctx->async_fd, &v, sizeof(v));
    {
      std::lock_guard<std::mutex> alock(ctx->async_mu);
      AsyncEventSlot e;
      while (ctx->async_ring.Pop(&e) == RingResult::kOk) {
        rocemu_async_event out{};
        out.event_type = static_cast<int>(e.event_type);
        bool known = true;
        {
          std::lock_guard<std::mutex> lock(ctx->mu);
          switch (e.event_type) {
            case ROCEMU_EVENT_CQ_ERR: {
              auto it = ctx->cqs.find(e.element);
              known = it != ctx->cqs.end();
              if (known) out.element.cq = it->second;
              break;
            }
            case ROCEMU_EVENT_SRQ_ERR:
            case ROCEMU_EVENT_SRQ_LIMIT_REACHED: {
              auto it = ctx->srqs.find(e.element);
              known = it != ctx->srqs.end();
              if (known) out.element.srq = it->second;
              break;
            }
            case ROCEMU_EVENT_DEVICE_FATAL:
            case ROCEMU_EVENT_PORT_ACTIVE:
            case ROCEMU_EVENT_PORT_ERR:
            case ROCEMU_EVENT_LID_CHANGE:
            case ROCEMU_EVENT_PKEY_CHANGE:
            case ROCEMU_EVENT_SM_CHANGE:
            case ROCEMU_EVENT_CLIENT_REREGISTER:
            case ROCEMU_EVENT_GID_CHANGE:
              out.element.port_num = static_cast<int>(e.element);
              break;
            default: {
              auto it = ctx->qps.find(e.element);
              known = it != ctx->qps.end();
              if (known) out.element.qp = it->second;
              break;
            }
          }
        }
        if (!known) continue;  // its object was destroyed meanwhile
        // More waiting: keep the fd readable for an application that
        // polls it before each call.
        if (ctx->async_ring.ConsumerSlot() != nullptr) {
          const uint64_t one = 1;
          (void)!write(ctx->async_fd, &one, sizeof(one));
        }
        *event = out;
        return 0;
      }
      if (ctx->async_ring.last_result() == RingResult::kCorrupt) return EIO;
    }
    pollfd p{ctx->async_fd, POLLIN, 0};
    const int n = poll(&p, 1, timeout_ms);
    if (n == 0) return ETIMEDOUT;
    if (n < 0 && errno != EINTR) return errno;
  }
}

void rocemu_ack_async_event(rocemu_async_event* event) {
  // Destroy calls do not wait for acknowledgements (events about a
  // destroyed object are skipped instead), so there is nothing to count.
  (void)event;
}

const char* rocemu_event_type_str(int event_type) {
  if (event_type < 0 || event_type > ROCEMU_EVENT_GID_CHANGE) return "unknown";
  return rocemu::nic::AsyncEventName(
      static_cast<rocemu::nic::AsyncEventType>(event_type));
}

const char* rocemu_wc_status_str(int status) {
  return rocemu::nic::WcStatusString(
      static_cast<rocemu::nic::WcStatus>(status));
}

}  // extern "C"
