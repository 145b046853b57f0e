#include "emulator/port/netdev_filter.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dlfcn.h>
#include <linux/if_link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "emulator/logging.h"
#include "emulator/netdev_filter_object.h"  // generated (meson)

namespace rocemu::emulator {
namespace {

constexpr char kXdpProgram[] = "rocemu_xdp";
constexpr char kTcProgram[] = "rocemu_tc";
constexpr char kDstsMap[] = "rocemu_dsts";
// BPF_TCX_INGRESS (Linux 6.6), which Debian 12's linux-libc-dev predates.
constexpr int kBpfTcxIngress = 46;
// The legacy tc filter's handle and priority (netlink attachment).
constexpr uint32_t kTcHandle = 0x4791;
constexpr uint32_t kTcPriority = 0x4791;

// Interfaces PrepareXdp registered: the PMD's attach becomes a bpf_link in
// `flags` (0: native where the driver has it; XDP_FLAGS_SKB_MODE).
struct XdpRegistration {
  int ifindex = 0;
  uint32_t flags = 0;
  int link_fd = -1;
  int prog_fd = -1;  // a duplicate, for FromXdp to find the map with
};
std::mutex g_xdp_mu;
std::vector<XdpRegistration>& Registrations() {
  static auto* const regs = new std::vector<XdpRegistration>;
  return *regs;
}
XdpRegistration* FindRegistration(int ifindex) {
  for (XdpRegistration& r : Registrations()) {
    if (r.ifindex == ifindex) return &r;
  }
  return nullptr;
}

// libbpf's own diagnostics (the kernel's reasons included) go to the log.
int LibbpfPrint(libbpf_print_level level, const char* format, va_list args) {
  if (level == LIBBPF_DEBUG) return 0;
  char line[512];
  std::vsnprintf(line, sizeof(line), format, args);
  std::string text = line;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  if (level == LIBBPF_WARN) {
    ROCEMU_LOG_WARNING("libbpf: %s", text);
  } else {
    ROCEMU_LOG_INFO("libbpf: %s", text);
  }
  return 0;
}

void RouteLibbpfLog() {
  static std::once_flag once;
  std::call_once(once, [] { libbpf_set_print(&LibbpfPrint); });
}

// The embedded object, opened and loaded with only `program` (the other
// one is for the other mode).
absl::StatusOr<bpf_object*> LoadObject(const char* program) {
  RouteLibbpfLog();
  LIBBPF_OPTS(bpf_object_open_opts, opts, .object_name = "rocemu_netdev");
  bpf_object* obj = bpf_object__open_mem(kNetdevFilterObject,
                                         sizeof(kNetdevFilterObject), &opts);
  if (obj == nullptr) {
    return absl::InternalError(
        absl::StrCat("BPF object: ", std::strerror(errno)));
  }
  bpf_program* prog;
  bpf_object__for_each_program(prog, obj) {
    bpf_program__set_autoload(
        prog, std::strcmp(bpf_program__name(prog), program) == 0);
  }
  if (bpf_object__load(obj) != 0) {
    const int err = errno;
    bpf_object__close(obj);
    return absl::PermissionDeniedError(absl::StrCat(
        "loading the BPF program ", program, ": ", std::strerror(err),
        err == EPERM ? " (needs CAP_BPF and CAP_NET_ADMIN, or root)" : ""));
  }
  return obj;
}

std::string ProgramName(uint32_t id) {
  const int fd = bpf_prog_get_fd_by_id(id);
  if (fd < 0) return "?";
  bpf_prog_info info{};
  uint32_t len = sizeof(info);
  std::string name = "?";
  if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0) name = info.name;
  close(fd);
  return name;
}

// The map named kDstsMap among those program `prog_fd` uses, or -1.
int FindDstsMap(int prog_fd) {
  uint32_t ids[16];
  bpf_prog_info info{};
  info.nr_map_ids = 16;
  info.map_ids = reinterpret_cast<uint64_t>(ids);
  uint32_t len = sizeof(info);
  if (bpf_obj_get_info_by_fd(prog_fd, &info, &len) != 0) return -1;
  for (uint32_t i = 0; i < std::min<uint32_t>(info.nr_map_ids, 16); ++i) {
    const int fd = bpf_map_get_fd_by_id(ids[i]);
    if (fd < 0) continue;
    bpf_map_info map{};
    uint32_t mlen = sizeof(map);
    if (bpf_obj_get_info_by_fd(fd, &map, &mlen) == 0 &&
        std::strcmp(map.name, kDstsMap) == 0) {
      return fd;
    }
    close(fd);
  }
  return -1;
}

using AttachFn = int (*)(int, int, uint32_t, const bpf_xdp_attach_opts*);
using DetachFn = int (*)(int, uint32_t, const bpf_xdp_attach_opts*);

// libbpf's own functions, for interfaces this module did not prepare.
AttachFn RealAttach() {
  return reinterpret_cast<AttachFn>(dlsym(RTLD_NEXT, "bpf_xdp_attach"));
}
DetachFn RealDetach() {
  return reinterpret_cast<DetachFn>(dlsym(RTLD_NEXT, "bpf_xdp_detach"));
}

}  // namespace

absl::StatusOr<int> NetdevFilter::ObjectMemfd() {
  const int fd = memfd_create("rocemu_netdev_filter.o", 0);
  if (fd < 0) return absl::ErrnoToStatus(errno, "memfd_create");
  const unsigned char* p = kNetdevFilterObject;
  size_t left = sizeof(kNetdevFilterObject);
  while (left > 0) {
    const ssize_t n = write(fd, p, left);
    if (n <= 0) {
      const int err = errno;
      close(fd);
      return absl::ErrnoToStatus(err, "writing the BPF object");
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return fd;
}

absl::StatusOr<std::string> NetdevFilter::PrepareXdp(
    int ifindex, const std::string& ifname) {
  uint32_t id = 0;
  if (bpf_xdp_query_id(ifindex, 0, &id) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("XDP query on ", ifname));
  }
  if (id != 0) {
    const std::string name = ProgramName(id);
    if (name != kXdpProgram) {
      return absl::FailedPreconditionError(absl::StrCat(
          ifname, " already has an XDP program of another (id ", id, ", '",
          name,
          "'): rocemud does not replace it (netdev_mode af_packet works "
          "beside it)"));
    }
    // Ours, left attached through netlink by a daemon killed before it
    // could detach: it passes every frame, and is replaced.
    if (DetachFn detach = RealDetach();
        detach == nullptr || detach(ifindex, 0, nullptr) != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(ifname, " has a rocemu_xdp program (id ", id,
                       ") that cannot be detached: ", std::strerror(errno)));
    }
    ROCEMU_LOG_WARNING(
        "%s: detached rocemu_xdp (id %u) left by an earlier daemon", ifname,
        id);
  }
  absl::StatusOr<bpf_object*> obj = LoadObject(kXdpProgram);
  if (!obj.ok()) return obj.status();
  const int prog_fd =
      bpf_program__fd(bpf_object__find_program_by_name(*obj, kXdpProgram));
  // A trial attachment, released at once: the driver's verdict before
  // the PMD depends on it. Native first (flags 0 lets the kernel choose
  // the driver's mode), then generic.
  uint32_t flags = 0;
  std::string mode = "native";
  int link = bpf_link_create(prog_fd, ifindex, BPF_XDP, nullptr);
  const int native_err = link < 0 ? errno : 0;
  if (link < 0) {
    LIBBPF_OPTS(bpf_link_create_opts, opts, .flags = XDP_FLAGS_SKB_MODE);
    link = bpf_link_create(prog_fd, ifindex, BPF_XDP, &opts);
    flags = XDP_FLAGS_SKB_MODE;
    mode = "generic";
    if (link >= 0) {
      ROCEMU_LOG_WARNING(
          "%s: the driver refuses a native XDP program (%s); generic XDP "
          "(after the kernel built an skb for each frame: slower)",
          ifname, std::strerror(native_err));
    }
  } else {
    LIBBPF_OPTS(bpf_xdp_query_opts, q);
    if (bpf_xdp_query(ifindex, 0, &q) == 0 &&
        q.attach_mode == XDP_ATTACHED_SKB) {
      mode = "generic";  // a driver without XDP: the kernel's generic hook
    }
  }
  const int generic_err = link < 0 ? errno : 0;
  if (link >= 0) close(link);
  bpf_object__close(*obj);
  if (link < 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the driver of ", ifname,
        " refuses XDP programs (native: ", std::strerror(native_err),
        "; generic: ", std::strerror(generic_err), ")"));
  }
  std::lock_guard<std::mutex> lock(g_xdp_mu);
  XdpRegistration* r = FindRegistration(ifindex);
  if (r == nullptr) {
    Registrations().push_back({ifindex});
    r = &Registrations().back();
  }
  r->flags = flags;
  return mode;
}

absl::StatusOr<std::unique_ptr<NetdevFilter>> NetdevFilter::FromXdp(
    int ifindex, const std::string& ifname) {
  std::unique_ptr<NetdevFilter> f(new NetdevFilter());
  int prog_fd = -1;
  {
    std::lock_guard<std::mutex> lock(g_xdp_mu);
    if (XdpRegistration* r = FindRegistration(ifindex);
        r != nullptr && r->link_fd >= 0) {
      prog_fd = dup(r->prog_fd);
      f->by_link_ = true;
      f->description_ = absl::StrCat(
          "xdp ", r->flags == XDP_FLAGS_SKB_MODE ? "generic" : "native",
          " (bpf_link)");
    }
  }
  if (prog_fd < 0) {
    // The PMD attached without our bpf_xdp_attach (another DPDK build?):
    // a netlink attachment, which outlives a killed daemon.
    uint32_t id = 0;
    if (bpf_xdp_query_id(ifindex, 0, &id) != 0 || id == 0 ||
        ProgramName(id) != kXdpProgram) {
      return absl::InternalError(
          absl::StrCat(ifname, ": rocemu_xdp is not attached"));
    }
    prog_fd = bpf_prog_get_fd_by_id(id);
    f->description_ = "xdp (netlink: stays after a SIGKILL)";
    ROCEMU_LOG_WARNING(
        "%s: rocemu_xdp was attached through netlink, not a bpf_link: if "
        "the daemon is killed it stays (passing every frame to the "
        "kernel) until the next start",
        ifname);
  }
  f->map_fd_ = prog_fd >= 0 ? FindDstsMap(prog_fd) : -1;
  if (prog_fd >= 0) close(prog_fd);
  if (f->map_fd_ < 0) {
    return absl::InternalError(
        absl::StrCat(ifname, ": no ", kDstsMap, " map on the XDP program"));
  }
  return f;
}

absl::StatusOr<std::unique_ptr<NetdevFilter>> NetdevFilter::AttachTc(
    int ifindex, const std::string& ifname) {
  absl::StatusOr<bpf_object*> obj = LoadObject(kTcProgram);
  if (!obj.ok()) return obj.status();
  std::unique_ptr<NetdevFilter> f(new NetdevFilter());
  f->object_ = *obj;
  const int prog_fd =
      bpf_program__fd(bpf_object__find_program_by_name(*obj, kTcProgram));
  f->map_fd_ = bpf_map__fd(bpf_object__find_map_by_name(*obj, kDstsMap));
  f->tc_link_fd_ = bpf_link_create(
      prog_fd, ifindex, static_cast<bpf_attach_type>(kBpfTcxIngress), nullptr);
  if (f->tc_link_fd_ >= 0) {
    f->by_link_ = true;
    f->description_ = "tc ingress (tcx bpf_link)";
    return f;
  }
  // Before Linux 6.6 (no tcx): a clsact qdisc and a direct-action cls_bpf
  // filter, through netlink. A filter a killed daemon left has the same
  // handle and priority and is replaced.
  const int tcx_err = errno;
  LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
              .attach_point = BPF_TC_INGRESS);
  if (int rc = bpf_tc_hook_create(&hook); rc != 0 && rc != -EEXIST) {
    return absl::FailedPreconditionError(absl::StrCat(
        ifname, ": no tc ingress hook (tcx: ", std::strerror(tcx_err),
        "; clsact: ", std::strerror(-rc), ")"));
  }
  LIBBPF_OPTS(bpf_tc_opts, opts, .prog_fd = prog_fd, .flags = BPF_TC_F_REPLACE,
              .handle = kTcHandle, .priority = kTcPriority);
  if (int rc = bpf_tc_attach(&hook, &opts); rc != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        ifname, ": attaching the tc filter: ", std::strerror(-rc)));
  }
  f->tc_ifindex_ = ifindex;
  f->description_ = "tc ingress (netlink: stays after a SIGKILL)";
  ROCEMU_LOG_WARNING(
      "%s: this kernel has no tcx (Linux 6.6): the tc filter dropping "
      "RoCEv2 before the kernel's UDP is attached through netlink and "
      "stays if the daemon is killed (remove it with: tc filter del dev %s "
      "ingress)",
      ifname, ifname);
  return f;
}

NetdevFilter::~NetdevFilter() {
  if (tc_link_fd_ >= 0) close(tc_link_fd_);
  if (tc_ifindex_ != 0) {
    LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = tc_ifindex_,
                .attach_point = BPF_TC_INGRESS);
    LIBBPF_OPTS(bpf_tc_opts, opts, .handle = kTcHandle,
                .priority = kTcPriority);
    (void)bpf_tc_detach(&hook, &opts);
  }
  if (object_ != nullptr) {
    bpf_object__close(static_cast<bpf_object*>(object_));
  } else if (map_fd_ >= 0) {
    close(map_fd_);
  }
}

absl::Status NetdevFilter::SetDestinations(std::span<const IpAddr> dsts) {
  for (const IpAddr& old : dsts_) {
    if (std::find(dsts.begin(), dsts.end(), old) == dsts.end()) {
      (void)bpf_map_delete_elem(map_fd_, old.data());
    }
  }
  const uint8_t one = 1;
  for (const IpAddr& d : dsts) {
    if (bpf_map_update_elem(map_fd_, d.data(), &one, BPF_ANY) != 0) {
      return absl::ErrnoToStatus(errno, "updating the address map");
    }
  }
  dsts_.assign(dsts.begin(), dsts.end());
  return absl::OkStatus();
}

}  // namespace rocemu::emulator

// The af_xdp PMD's calls (see netdev_filter.h). Exported from rocemud
// (meson: the executable's dynamic list), so that the PMD, a plugin the
// EAL loads, resolves them here before libbpf.
extern "C" int bpf_xdp_attach(int ifindex, int prog_fd, uint32_t flags,
                              const bpf_xdp_attach_opts* opts) {
  using rocemu::emulator::XdpRegistration;
  {
    std::lock_guard<std::mutex> lock(rocemu::emulator::g_xdp_mu);
    XdpRegistration* r = rocemu::emulator::FindRegistration(ifindex);
    if (r != nullptr && prog_fd >= 0) {
      if (r->link_fd >= 0) return -EEXIST;
      LIBBPF_OPTS(bpf_link_create_opts, link_opts, .flags = r->flags);
      const int fd = bpf_link_create(prog_fd, ifindex, BPF_XDP, &link_opts);
      if (fd < 0) return -errno;
      r->link_fd = fd;
      r->prog_fd = dup(prog_fd);
      return 0;
    }
  }
  rocemu::emulator::AttachFn real = rocemu::emulator::RealAttach();
  return real != nullptr ? real(ifindex, prog_fd, flags, opts) : -ENOSYS;
}

extern "C" int bpf_xdp_detach(int ifindex, uint32_t flags,
                              const bpf_xdp_attach_opts* opts) {
  using rocemu::emulator::XdpRegistration;
  {
    std::lock_guard<std::mutex> lock(rocemu::emulator::g_xdp_mu);
    XdpRegistration* r = rocemu::emulator::FindRegistration(ifindex);
    if (r != nullptr && r->link_fd >= 0) {
      close(r->link_fd);
      close(r->prog_fd);
      r->link_fd = r->prog_fd = -1;
      return 0;
    }
  }
  rocemu::emulator::DetachFn real = rocemu::emulator::RealDetach();
  return real != nullptr ? real(ifindex, flags, opts) : -ENOSYS;
}
