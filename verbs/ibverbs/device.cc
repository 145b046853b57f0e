// Devices and contexts: discovery (rocemud verbs sockets instead of sysfs
// and /dev/infiniband), open/close with the real ibv_context /
// verbs_context layout, device and port queries, and the sysfs helpers
// libibverbs exports (answered for our devices, read from /sys otherwise).
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "nic/device_attr.h"
#include "verbs/client/client_control.h"
#include "verbs/ibverbs/dropin.h"
#include "verbs/ibverbs/import.h"
#include "verbs/wire/attr_copy.h"

namespace rocemu::ibverbs {
namespace {

std::mutex& DevicesMu() {
  static std::mutex mu;
  return mu;
}
// Every device ever listed, by socket path; never freed (see DevImpl).
std::vector<DevImpl*>& Devices() {
  static auto* v = new std::vector<DevImpl*>;
  return *v;
}
const char kVerbsDeviceOps[] = "rocemu";

DevImpl* DeviceFor(const char* path, const char* name) {
  for (DevImpl* d : Devices()) {
    if (d->path == path) {
      std::snprintf(d->dev.name, sizeof(d->dev.name), "%s", name);
      return d;
    }
  }
  auto* d = new DevImpl{};
  d->verbs_device_ops = kVerbsDeviceOps;
  d->path = path;
  d->index = static_cast<int>(Devices().size());
  d->dev.node_type = IBV_NODE_CA;
  d->dev.transport_type = IBV_TRANSPORT_IB;  // RoCE devices say IB
  std::snprintf(d->dev.name, sizeof(d->dev.name), "%s", name);
  std::snprintf(d->dev.dev_name, sizeof(d->dev.dev_name), "uverbs%d", d->index);
  std::snprintf(d->dev.dev_path, sizeof(d->dev.dev_path),
                "/sys/class/infiniband_verbs/uverbs%d", d->index);
  std::snprintf(d->dev.ibdev_path, sizeof(d->dev.ibdev_path),
                "/sys/class/infiniband/%s", name);
  Devices().push_back(d);
  return d;
}

// Where discovery looked, for the one line printed when nothing answered.
std::string Searched() {
  if (const char* one = std::getenv("ROCEMU_VERBS_SOCKET")) {
    return std::string("socket ") + one + " ($ROCEMU_VERBS_SOCKET)";
  }
  const char* dir = std::getenv("ROCEMU_VERBS_DIR");
  return std::string("sockets in ") + (dir != nullptr ? dir : "/run/rocemu") +
         (dir != nullptr ? " ($ROCEMU_VERBS_DIR)" : "");
}

int MakeEpoll(int data_fd, int socket_fd) {
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) return -1;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = data_fd;
  epoll_event hup{};
  hup.events = EPOLLRDHUP;
  hup.data.fd = socket_fd;
  if (epoll_ctl(ep, EPOLL_CTL_ADD, data_fd, &ev) != 0 ||
      epoll_ctl(ep, EPOLL_CTL_ADD, socket_fd, &hup) != 0) {
    close(ep);
    return -1;
  }
  return ep;
}

uint8_t MtuCode(int v) { return static_cast<uint8_t>(v); }

void FillPortAttr(const rocemu_port_attr& p, ibv_port_attr* a) {
  *a = ibv_port_attr{};
  a->state = static_cast<ibv_port_state>(p.state);
  a->max_mtu = static_cast<ibv_mtu>(MtuCode(p.max_mtu));
  a->active_mtu = static_cast<ibv_mtu>(MtuCode(p.active_mtu));
  a->gid_tbl_len = p.gid_tbl_len;
  a->port_cap_flags = p.port_cap_flags;
  a->max_msg_sz = p.max_msg_sz;
  a->bad_pkey_cntr = p.bad_pkey_cntr;
  a->qkey_viol_cntr = p.qkey_viol_cntr;
  a->pkey_tbl_len = p.pkey_tbl_len;
  a->max_vl_num = p.max_vl_num;
  a->active_width = p.active_width;
  a->active_speed = p.active_speed;
  a->phys_state = p.phys_state;
  a->link_layer = IBV_LINK_LAYER_ETHERNET;
}

int QueryPortInto(ibv_context* context, uint8_t port_num, ibv_port_attr* out,
                  size_t len) {
  CtxImpl* ctx = Ctx(context);
  if (Dead(ctx)) return EIO;
  rocemu_port_attr p{};
  const int err = rocemu_query_port(ctx->rc, port_num, &p);
  if (err != 0) return err;
  ibv_port_attr a;
  FillPortAttr(p, &a);
  std::memcpy(out, &a, std::min(len, sizeof(a)));
  return 0;
}

void FillDeviceAttr(const rocemu_device_attr& r, ibv_device_attr* a) {
  *a = ibv_device_attr{};
  std::snprintf(a->fw_ver, sizeof(a->fw_ver), "%s", r.fw_ver);
  a->node_guid = htobe64(r.node_guid);
  a->sys_image_guid = htobe64(r.sys_image_guid);
  rocemu::verbs::CopyDeviceLimits(r, a);
}

int QueryDeviceEx(ibv_context* context, const ibv_query_device_ex_input* in,
                  ibv_device_attr_ex* out, size_t len) {
  if (in != nullptr && in->comp_mask != 0) return EINVAL;
  CtxImpl* ctx = Ctx(context);
  if (Dead(ctx)) return EIO;
  rocemu_device_attr r{};
  const int err = rocemu_query_device(ctx->rc, &r);
  if (err != 0) return err;
  ibv_device_attr_ex a{};
  FillDeviceAttr(r, &a.orig_attr);
  a.device_cap_flags_ex =
      r.device_cap_flags | nic::DeviceAttr::kDeviceCapFlagsEx;
  a.phys_port_cnt_ex = r.phys_port_cnt;
  // On-demand paging on every transport, implicit ODP included: the daemon
  // reaches an ODP region's pages at each access (ROCEMU_ACCESS_ON_DEMAND).
  constexpr uint32_t kAllOps =
      IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
      IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;
  a.odp_caps.general_caps = IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT;
  a.odp_caps.per_transport_caps.rc_odp_caps = kAllOps;
  a.odp_caps.per_transport_caps.uc_odp_caps =
      IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE;
  a.odp_caps.per_transport_caps.ud_odp_caps =
      IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_SRQ_RECV;
  // XRC: RC's operations, receives through XRC SRQs only.
  a.xrc_odp_caps = kAllOps & ~IBV_ODP_SUPPORT_RECV;
  a.max_dm_size = MaxDmSize();
  // Completion timestamps count nanoseconds of CLOCK_MONOTONIC_RAW (a
  // 1 GHz "core clock" that never wraps in practice).
  a.completion_timestamp_mask = ~uint64_t{0};
  a.hca_core_clock = 1000000;  // kHz
  // RSS over WQs for raw packet QPs (verbs/ibverbs/wq.cc, nic/rss.h):
  // Toeplitz over IPv4/IPv6 addresses and TCP/UDP ports, tables of up to
  // 64 WQs. No TSO, no raw packet offloads (raw_packet_caps 0), no CQ
  // moderation: those blocks stay zero.
  a.rss_caps.supported_qpts = 1u << IBV_QPT_RAW_PACKET;
  a.rss_caps.max_rwq_indirection_tables = r.max_qp;
  a.rss_caps.max_rwq_indirection_table_size = 64;
  a.rss_caps.rx_hash_fields_mask =
      0xFF;  // IBV_RX_HASH_SRC_IPV4 .. DST_PORT_UDP
  a.rss_caps.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
  a.max_wq_type_rq = r.max_qp;
  // Tag matching on RC (nic/tag_matching.h), the daemon's limits.
  const nic::TmCaps tm = nic::DeviceAttr{}.tm_caps;
  a.tm_caps.max_rndv_hdr_size = tm.max_rndv_hdr_size;
  a.tm_caps.max_num_tags = tm.max_num_tags;
  a.tm_caps.flags = IBV_TM_CAP_RC;
  a.tm_caps.max_ops = tm.max_ops;
  a.tm_caps.max_sge = tm.max_sge;
  std::memcpy(out, &a, std::min(len, sizeof(a)));
  return 0;
}

// The clock completion timestamps count, read now; as mlx5, the raw value
// is in raw_clock.tv_nsec.
int QueryRtValues(ibv_context* context, ibv_values_ex* values) {
  if (Dead(Ctx(context))) return EIO;
  if ((values->comp_mask & ~static_cast<uint32_t>(IBV_VALUES_MASK_RAW_CLOCK)) !=
      0) {
    return EINVAL;
  }
  uint32_t got = 0;
  if ((values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK) != 0) {
    values->raw_clock.tv_sec = 0;
    values->raw_clock.tv_nsec = static_cast<long>(rocemu_clock_ns());
    got |= IBV_VALUES_MASK_RAW_CLOCK;
  }
  values->comp_mask = got;
  return 0;
}

int QueryPortOp(ibv_context* context, uint8_t port_num, ibv_port_attr* attr,
                size_t len) {
  return QueryPortInto(context, port_num, attr, len);
}

// The virtual sysfs of our devices: what ibv_devinfo and friends read
// through ibv_read_sysfs_file.
bool VirtualSysfs(const char* dir, const char* file, std::string* out) {
  std::lock_guard<std::mutex> lock(DevicesMu());
  for (DevImpl* d : Devices()) {
    if (std::strcmp(dir, d->dev.ibdev_path) != 0) continue;
    if (std::strcmp(file, "board_id") == 0) {
      *out = "ROCEMU_SOFT_ROCE\n";
    } else if (std::strcmp(file, "node_type") == 0) {
      *out = "1: CA\n";
    } else if (std::strcmp(file, "hca_type") == 0) {
      *out = "rocemu\n";
    } else if (std::strcmp(file, "node_desc") == 0) {
      *out = std::string("rocemu ") + d->dev.name + "\n";
    } else {
      return false;
    }
    return true;
  }
  return false;
}

}  // namespace

void WarnOnce(const char* topic, const char* fmt, ...) {
  static std::mutex mu;
  static std::vector<std::string>* seen = new std::vector<std::string>;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (std::find(seen->begin(), seen->end(), topic) != seen->end()) return;
    seen->emplace_back(topic);
  }
  va_list ap;
  va_start(ap, fmt);
  std::fprintf(stderr, "rocemu libibverbs: ");
  std::vfprintf(stderr, fmt, ap);
  std::fprintf(stderr, "\n");
  va_end(ap);
}

void WaitAcked(pthread_mutex_t* mu, pthread_cond_t* cond,
               const uint32_t* completed, uint32_t reported) {
  pthread_mutex_lock(mu);
  while (*completed != reported) pthread_cond_wait(cond, mu);
  pthread_mutex_unlock(mu);
}

void FillDeviceOps(CtxImpl* ctx) {
  verbs_context& v = ctx->vctx;
  v.query_port = QueryPortOp;
  v.query_device_ex = QueryDeviceEx;
  v.query_rt_values = QueryRtValues;
}

}  // namespace rocemu::ibverbs

using namespace rocemu::ibverbs;  // NOLINT: the exported functions below

extern "C" {

ibv_device** rocemu_ibv_get_device_list(int* num_devices) {
  int n = 0;
  rocemu_device** found = rocemu_get_device_list(&n);
  if (found == nullptr) return nullptr;
  std::vector<ibv_device*> out;
  {
    std::lock_guard<std::mutex> lock(DevicesMu());
    for (int i = 0; i < n; ++i) {
      out.push_back(&DeviceFor(rocemu_get_device_path(found[i]),
                               rocemu_get_device_name(found[i]))
                         ->dev);
    }
  }
  rocemu_free_device_list(found);
  if (out.empty()) {
    const int why = rocemu::verbs::client::LastProbeError();
    WarnOnce("no-device",
             "no rocemud answered on the %s; is the daemon running?%s%s%s",
             Searched().c_str(), why != 0 ? " (" : "",
             why != 0 ? std::strerror(why) : "", why != 0 ? ")" : "");
  }
  auto** list = static_cast<ibv_device**>(
      std::calloc(out.size() + 1, sizeof(ibv_device*)));
  if (list == nullptr) return FailNull<ibv_device*>(ENOMEM);
  std::copy(out.begin(), out.end(), list);
  if (num_devices != nullptr) *num_devices = static_cast<int>(out.size());
  return list;
}

void rocemu_ibv_free_device_list(ibv_device** list) { std::free(list); }

const char* rocemu_ibv_get_device_name(ibv_device* device) {
  return device->name;
}

int ibv_get_device_index(ibv_device* device) { return Dev(device)->index; }

__be64 rocemu_ibv_get_device_guid(ibv_device* device) {
  rocemu_context* rc = rocemu_open_device(Dev(device)->path.c_str());
  if (rc == nullptr) return 0;
  rocemu_device_attr a{};
  const int err = rocemu_query_device(rc, &a);
  rocemu_close_device(rc);
  return err == 0 ? htobe64(a.node_guid) : 0;
}

// One more context of this process on the session rc (registered with
// import.h), answering on cmd_fd: rc's socket for an opened context, the
// descriptor the program passed for an imported one (closed with it, as
// libibverbs closes an imported context's cmd_fd). A failure releases rc.
static ibv_context* NewContext(DevImpl* dev, rocemu_context* rc, int cmd_fd) {
  ibv_device* device = &dev->dev;
  auto* ctx = new CtxImpl{};
  ctx->rc = rc;
  ctx->dev = dev;
  if (rocemu_query_device(rc, &ctx->attr) != 0) {
    if (ReleaseSession(rc)) rocemu_close_device(rc);
    delete ctx;
    return FailNull<ibv_context>(EIO);
  }
  ctx->async_epfd = MakeEpoll(rocemu_async_fd(rc), rc->fd);
  if (ctx->async_epfd < 0) {
    const int e = errno;
    if (ReleaseSession(rc)) rocemu_close_device(rc);
    delete ctx;
    return FailNull<ibv_context>(e);
  }
  verbs_context& v = ctx->vctx;
  ibv_context& c = v.context;
  c.device = device;
  c.cmd_fd = cmd_fd;
  c.async_fd = ctx->async_epfd;
  c.num_comp_vectors = 1;
  pthread_mutex_init(&c.mutex, nullptr);
  c.abi_compat = __VERBS_ABI_IS_EXTENDED;
  v.sz = sizeof(verbs_context);
  // Every extension slot refuses unless a file below provides it, as
  // libibverbs pre-fills a context with its dummy ops.
  RefuseSlot(&v.query_port);
  RefuseSlot(&v.advise_mr);
  RefuseSlot(&v.alloc_null_mr);
  RefuseSlot(&v.read_counters);
  RefuseSlot(&v.attach_counters_point_flow);
  RefuseSlot(&v.create_counters);
  RefuseSlot(&v.destroy_counters);
  RefuseSlot(&v.reg_dm_mr);
  RefuseSlot(&v.alloc_dm);
  RefuseSlot(&v.free_dm);
  RefuseSlot(&v.modify_flow_action_esp);
  RefuseSlot(&v.destroy_flow_action);
  RefuseSlot(&v.create_flow_action_esp);
  RefuseSlot(&v.modify_qp_rate_limit);
  RefuseSlot(&v.alloc_parent_domain);
  RefuseSlot(&v.dealloc_td);
  RefuseSlot(&v.alloc_td);
  RefuseSlot(&v.modify_cq);
  RefuseSlot(&v.post_srq_ops);
  RefuseSlot(&v.destroy_rwq_ind_table);
  RefuseSlot(&v.create_rwq_ind_table);
  RefuseSlot(&v.destroy_wq);
  RefuseSlot(&v.modify_wq);
  RefuseSlot(&v.create_wq);
  RefuseSlot(&v.query_rt_values);
  RefuseSlot(&v.create_cq_ex);
  RefuseSlot(&v.query_device_ex);
  RefuseSlot(&v.ibv_destroy_flow);
  RefuseSlot(&v.ABI_placeholder2);
  RefuseSlot(&v.ibv_create_flow);
  RefuseSlot(&v.ABI_placeholder1);
  RefuseSlot(&v.open_qp);
  RefuseSlot(&v.create_qp_ex);
  RefuseSlot(&v.get_srq_num);
  RefuseSlot(&v.create_srq_ex);
  RefuseSlot(&v.open_xrcd);
  RefuseSlot(&v.close_xrcd);
  ibv_context_ops& o = c.ops;
  RefuseSlot(&o._compat_query_device);
  RefuseSlot(&o._compat_query_port);
  RefuseSlot(&o._compat_alloc_pd);
  RefuseSlot(&o._compat_dealloc_pd);
  RefuseSlot(&o._compat_reg_mr);
  RefuseSlot(&o._compat_rereg_mr);
  RefuseSlot(&o._compat_dereg_mr);
  RefuseSlot(&o.alloc_mw);
  RefuseSlot(&o.bind_mw);
  RefuseSlot(&o.dealloc_mw);
  RefuseSlot(&o._compat_create_cq);
  RefuseSlot(&o.poll_cq);
  RefuseSlot(&o.req_notify_cq);
  RefuseSlot(&o._compat_cq_event);
  RefuseSlot(&o._compat_resize_cq);
  RefuseSlot(&o._compat_destroy_cq);
  RefuseSlot(&o._compat_create_srq);
  RefuseSlot(&o._compat_modify_srq);
  RefuseSlot(&o._compat_query_srq);
  RefuseSlot(&o._compat_destroy_srq);
  RefuseSlot(&o.post_srq_recv);
  RefuseSlot(&o._compat_create_qp);
  RefuseSlot(&o._compat_query_qp);
  RefuseSlot(&o._compat_modify_qp);
  RefuseSlot(&o._compat_destroy_qp);
  RefuseSlot(&o.post_send);
  RefuseSlot(&o.post_recv);
  RefuseSlot(&o._compat_create_ah);
  RefuseSlot(&o._compat_destroy_ah);
  RefuseSlot(&o._compat_attach_mcast);
  RefuseSlot(&o._compat_detach_mcast);
  RefuseSlot(&o._compat_async_event);
  FillDeviceOps(ctx);
  FillMemoryOps(ctx);
  FillCqOps(ctx);
  FillQpOps(ctx);
  FillSrqOps(ctx);
  FillXrcOps(ctx);
  FillFlowOps(ctx);
  FillWqOps(ctx);
  return &c;
}

ibv_context* rocemu_ibv_open_device(ibv_device* device) {
  DevImpl* dev = Dev(device);
  rocemu_context* rc = rocemu_open_device(dev->path.c_str());
  if (rc == nullptr) return nullptr;
  RegisterSession(rc, dev);
  return NewContext(dev, rc, rc->fd);
}

int rocemu_ibv_close_device(ibv_context* context) {
  CtxImpl* ctx = Ctx(context);
  for (ibv_pd* pd : ctx->retired_parent_domains) delete Pd(pd);
  if (context->cmd_fd != ctx->rc->fd) close(context->cmd_fd);  // imported
  if (ReleaseSession(ctx->rc)) rocemu_close_device(ctx->rc);
  close(ctx->async_epfd);
  pthread_mutex_destroy(&context->mutex);
  delete ctx;
  return 0;
}

int rocemu_ibv_query_device(ibv_context* context,
                            ibv_device_attr* device_attr) {
  CtxImpl* ctx = Ctx(context);
  if (Dead(ctx)) return EIO;
  rocemu_device_attr r{};
  const int err = rocemu_query_device(ctx->rc, &r);
  if (err != 0) return err;
  FillDeviceAttr(r, device_attr);
  return 0;
}

// The exported form fills the 48-byte layout without port_cap_flags2
// (programs that see an extended context call the verbs_context slot).
int rocemu_ibv_query_port(ibv_context* context, uint8_t port_num,
                          _compat_ibv_port_attr* port_attr) {
  return QueryPortInto(context, port_num,
                       reinterpret_cast<ibv_port_attr*>(port_attr),
                       offsetof(ibv_port_attr, port_cap_flags2));
}

int rocemu_ibv_query_gid(ibv_context* context, uint8_t port_num, int index,
                         ibv_gid* gid) {
  CtxImpl* ctx = Ctx(context);
  if (Dead(ctx)) {
    errno = EIO;
    return -1;
  }
  const int err = rocemu_query_gid(ctx->rc, port_num, index, gid->raw);
  if (err != 0) {
    errno = err;
    return -1;
  }
  return 0;
}

int _ibv_query_gid_ex(ibv_context* context, uint32_t port_num,
                      uint32_t gid_index, ibv_gid_entry* entry, uint32_t flags,
                      size_t entry_size) {
  if (flags != 0) return EOPNOTSUPP;
  if (entry_size < sizeof(ibv_gid_entry)) return EINVAL;
  CtxImpl* ctx = Ctx(context);
  if (Dead(ctx)) return EIO;
  if (port_num == 0 || port_num > 255) return EINVAL;
  ibv_gid_entry e{};
  const int err = rocemu_query_gid(ctx->rc, static_cast<uint8_t>(port_num),
                                   static_cast<int>(gid_index), e.gid.raw);
  if (err != 0) return err;
  static const uint8_t kZero[16] = {};
  if (std::memcmp(e.gid.raw, kZero, sizeof(kZero)) == 0) return ENODATA;
  e.gid_index = gid_index;
  e.port_num = port_num;
  e.gid_type = IBV_GID_TYPE_ROCE_V2;
  e.ndev_ifindex = 0;
  std::memcpy(entry, &e, sizeof(e));
  return 0;
}

ssize_t _ibv_query_gid_table(ibv_context* context, ibv_gid_entry* entries,
                             size_t max_entries, uint32_t flags,
                             size_t entry_size) {
  if (flags != 0) return -EOPNOTSUPP;
  if (entry_size < sizeof(ibv_gid_entry)) return -EINVAL;
  CtxImpl* ctx = Ctx(context);
  if (Dead(ctx)) return -EIO;
  rocemu_port_attr p{};
  const int err = rocemu_query_port(ctx->rc, 1, &p);
  if (err != 0) return -err;
  std::vector<rocemu_gid_entry> valid(static_cast<size_t>(p.gid_tbl_len));
  const int n = rocemu_query_gid_table(ctx->rc, 1, valid.data(),
                                       static_cast<int>(valid.size()));
  if (n < 0) return n;
  if (static_cast<size_t>(n) > max_entries) return -EINVAL;
  auto* out = reinterpret_cast<uint8_t*>(entries);
  for (int i = 0; i < n; ++i) {
    ibv_gid_entry e{};
    std::memcpy(e.gid.raw, valid[i].gid, sizeof(e.gid.raw));
    e.gid_index = valid[i].index;
    e.port_num = 1;
    e.gid_type = IBV_GID_TYPE_ROCE_V2;
    std::memcpy(out + static_cast<size_t>(i) * entry_size, &e, sizeof(e));
  }
  return n;
}

// Private to rdma-core but imported by ibv_devinfo and pyverbs: the sysfs
// form of the GID type (rdma-core's enum ibv_gid_type_sysfs, an int: 0 for
// IB/RoCE v1, 1 for RoCE v2).
enum { kGidTypeSysfsIbRoceV1 = 0, kGidTypeSysfsRoceV2 = 1 };
int ibv_query_gid_type(ibv_context* context, uint8_t port_num,
                       unsigned int index, int* type) {
  ibv_gid_entry e{};
  const int err = _ibv_query_gid_ex(context, port_num, index, &e, 0, sizeof(e));
  if (err == ENODATA) {
    *type = kGidTypeSysfsIbRoceV1;
    return 0;
  }
  if (err != 0) {
    errno = err;
    return -1;
  }
  *type = kGidTypeSysfsRoceV2;
  return 0;
}

int rocemu_ibv_query_pkey(ibv_context* context, uint8_t port_num, int index,
                          __be16* pkey) {
  CtxImpl* ctx = Ctx(context);
  if (Dead(ctx)) {
    errno = EIO;
    return -1;
  }
  const int err = rocemu_query_pkey(ctx->rc, port_num, index, pkey);
  if (err != 0) {
    errno = err;
    return -1;
  }
  return 0;
}

int ibv_get_pkey_index(ibv_context* context, uint8_t port_num, __be16 pkey) {
  CtxImpl* ctx = Ctx(context);
  rocemu_port_attr p{};
  if (rocemu_query_port(ctx->rc, port_num, &p) != 0) return -1;
  for (int i = 0; i < p.pkey_tbl_len; ++i) {
    __be16 v = 0;
    if (rocemu_query_pkey(ctx->rc, port_num, i, &v) != 0) return -1;
    if (v == pkey) return i;
  }
  return -1;
}

const char* ibv_get_sysfs_path(void) {
  const char* p = std::getenv("SYSFS_PATH");
  return p != nullptr && getuid() == geteuid() ? p : "/sys";
}

int ibv_read_sysfs_file(const char* dir, const char* file, char* buf,
                        size_t size) {
  std::string v;
  if (VirtualSysfs(dir, file, &v)) {
    if (size == 0) return 0;
    const size_t n = std::min(size - 1, v.size());
    std::memcpy(buf, v.data(), n);
    buf[n] = '\0';
    if (n > 0 && buf[n - 1] == '\n') buf[n - 1] = '\0';
    return static_cast<int>(n);
  }
  const std::string path = std::string(dir) + "/" + file;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  const ssize_t n = read(fd, buf, size);
  close(fd);
  if (n <= 0) return -1;
  if (static_cast<size_t>(n) < size) buf[n] = '\0';
  if (buf[n - 1] == '\n') buf[n - 1] = '\0';
  return static_cast<int>(n);
}

// A second context on the session whose socket cmd_fd is (a dup of an
// open context's cmd_fd): import.h. Another process's session cannot be
// shared, so its descriptor is refused as a device without import is.
ibv_context* ibv_import_device(int cmd_fd) {
  DevImpl* dev = nullptr;
  rocemu_context* rc = AcquireSession(cmd_fd, &dev);
  if (rc == nullptr) {
    WarnOnce("import-device",
             "ibv_import_device: fd %d is not the command fd of a rocemu "
             "context of this process (contexts of other processes cannot be "
             "imported)",
             cmd_fd);
    return FailNull<ibv_context>(EOPNOTSUPP);
  }
  if (rc->dead.load(std::memory_order_relaxed)) {
    if (ReleaseSession(rc)) rocemu_close_device(rc);
    return FailNull<ibv_context>(EIO);
  }
  return NewContext(dev, rc, cmd_fd);
}

}  // extern "C"

ROCEMU_IBV_1_1(ibv_get_device_list);
ROCEMU_IBV_1_1(ibv_free_device_list);
ROCEMU_IBV_1_1(ibv_get_device_name);
ROCEMU_IBV_1_1(ibv_get_device_guid);
ROCEMU_IBV_1_1(ibv_open_device);
ROCEMU_IBV_1_1(ibv_close_device);
ROCEMU_IBV_1_1(ibv_query_device);
ROCEMU_IBV_1_1(ibv_query_port);
ROCEMU_IBV_1_1(ibv_query_gid);
ROCEMU_IBV_1_1(ibv_query_pkey);
