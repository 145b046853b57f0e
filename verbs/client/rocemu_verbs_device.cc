// The rocemu C API: devices, contexts and the port/device/GID/P_Key queries.
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "verbs/client/client_control.h"
#include "verbs/client/client_embedded.h"
#include "verbs/client/client_objects.h"
#include "verbs/rocemu_verbs.h"
#include "verbs/wire/attr_copy.h"
#include "verbs/wire/ring_slots.h"

namespace wire = rocemu::verbs::wire;
using namespace rocemu::verbs::client;  // NOLINT: the library's own internals

namespace rocemu::verbs::client {
namespace {
thread_local int last_probe_error = 0;
}  // namespace
int LastProbeError() { return last_probe_error; }
}  // namespace rocemu::verbs::client

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
  if (const std::vector<std::string>& own = EmbeddedSockets(); !own.empty()) {
    paths = own;
  } else if (const char* one = std::getenv("ROCEMU_VERBS_SOCKET");
             one != nullptr) {
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
    rocemu::verbs::client::last_probe_error = ctx == nullptr ? err : 0;
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
  if (ctx->wake_fd >= 0) close(ctx->wake_fd);
  if (ctx->wake != nullptr) {
    munmap(const_cast<rocemu::verbs::WakePage*>(ctx->wake), ctx->wake_len);
  }
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
  // ibv_device_attr's int fields: the daemon's limits fit (checked by
  // DeviceAttr::Validate), clamped anyway.
  rocemu::verbs::CopyDeviceLimits(r, attr, [](auto& to, const auto& from) {
    using To = std::remove_reference_t<decltype(to)>;
    if constexpr (std::is_same_v<To, int>) {
      to = static_cast<int>(std::min<uint64_t>(from, INT32_MAX));
    } else {
      to = static_cast<To>(from);
    }
  });
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

int rocemu_query_gid_table(rocemu_context* ctx, uint8_t port_num,
                           rocemu_gid_entry* entries, int max_entries) {
  if (max_entries < 0) return -EINVAL;
  int n = 0;
  wire::TableQueryReq req{};
  req.port_num = port_num;
  for (;;) {
    wire::QueryGidTableResp r{};
    const int err = Call(ctx, wire::MsgType::kQueryGidTable, req, &r);
    if (err != 0) return -err;
    if (r.count > wire::kGidBatch) return -EPROTO;
    for (uint32_t k = 0; k < r.count; ++k) {
      if (n == max_entries) return -ENOSPC;
      entries[n].index = r.entries[k].index;
      std::memcpy(entries[n].gid, r.entries[k].gid, 16);
      ++n;
    }
    // The daemon always moves on; a reply that does not is a broken one.
    if (r.count < wire::kGidBatch || r.next_index <= req.index) return n;
    req.index = r.next_index;
  }
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

}  // extern "C"
