#include "verbs/server/session_convert.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_format.h"
#include "verbs/wire/attr_copy.h"

namespace rocemu::verbs {

int ErrnoOf(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kOk:
      return 0;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
      return EINVAL;
    case absl::StatusCode::kNotFound:
      return ENOENT;
    case absl::StatusCode::kAlreadyExists:  // a listened service, ...
      return EEXIST;
    case absl::StatusCode::kResourceExhausted:
      return ENOMEM;
    case absl::StatusCode::kUnavailable:
      return EBUSY;
    case absl::StatusCode::kPermissionDenied:
      return EACCES;
    case absl::StatusCode::kUnimplemented:
      return EOPNOTSUPP;
    case absl::StatusCode::kOutOfRange:
      return EPROTONOSUPPORT;
    case absl::StatusCode::kDataLoss:
      return EPROTO;
    case absl::StatusCode::kAborted:  // ResolveDmac, an XRC file: try again
      return EAGAIN;
    default:
      return EIO;
  }
}

size_t PageSize() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

// ibv_qp_type values <-> the RNIC's.
bool QpTypeFromWire(uint8_t t, nic::QpType* out) {
  switch (t) {
    case 2:
      *out = nic::QpType::kRc;
      return true;
    case 3:
      *out = nic::QpType::kUc;
      return true;
    case 4:
      *out = nic::QpType::kUd;
      return true;
    case 9:  // IBV_QPT_XRC_SEND
      *out = nic::QpType::kXrcIni;
      return true;
    case 10:  // IBV_QPT_XRC_RECV
      *out = nic::QpType::kXrcTgt;
      return true;
    case 8:
      *out = nic::QpType::kRawPacket;
      return true;
    default:
      return false;
  }
}

nic::QpCap CapFromWire(const wire::WireQpCap& c) {
  nic::QpCap out;
  CopyQpCap(c, &out);
  return out;
}
wire::WireQpCap CapToWire(const nic::QpCap& c) {
  wire::WireQpCap out{};
  CopyQpCap(c, &out);
  return out;
}

void PathFromWire(const wire::WireAhAttr& w, nic::QpPath* p) {
  std::memcpy(p->dgid.data(), w.dgid, sizeof(w.dgid));
  std::memcpy(p->dmac.data(), w.dmac, sizeof(w.dmac));
  p->sgid_index = w.sgid_index;
  p->traffic_class = w.traffic_class;
  p->flow_label = w.flow_label;
  p->hop_limit = w.hop_limit;
  p->sl = w.sl;
  p->port_num = w.port_num;
}
void PathToWire(const nic::QpPath& p, wire::WireAhAttr* w) {
  std::memcpy(w->dgid, p.dgid.data(), sizeof(w->dgid));
  std::memcpy(w->dmac, p.dmac.data(), sizeof(w->dmac));
  w->sgid_index = p.sgid_index;
  w->traffic_class = p.traffic_class;
  w->flow_label = p.flow_label;
  w->hop_limit = p.hop_limit;
  w->sl = p.sl;
  w->port_num = p.port_num;
}

// Values outside the RNIC's enums are refused before they are cast.
absl::Status QpAttrFromWire(const wire::WireQpAttr& w, uint32_t mask,
                            nic::QpAttr* a) {
  // Fields outside the mask are not read, as the kernel ignores them:
  // programs leave them unset (ibv_xsrq_pingpong's ibv_qp_attr is not
  // cleared).
  if (((mask & nic::qp_attr::kState) != 0 && w.qp_state >= nic::kNumQpStates) ||
      ((mask & nic::qp_attr::kCurState) != 0 &&
       w.cur_qp_state >= nic::kNumQpStates)) {
    return absl::InvalidArgumentError("QP state out of range");
  }
  if ((mask & nic::qp_attr::kPathMtu) != 0 &&
      (w.path_mtu < 1 || w.path_mtu > 5)) {
    return absl::InvalidArgumentError("path MTU out of range");
  }
  if ((mask & ~nic::qp_attr::kAll) != 0) {
    return absl::InvalidArgumentError("unknown attribute mask bits");
  }
  rocemu::verbs::CopyQpAttrScalars(w, a);
  if ((mask & nic::qp_attr::kPathMtu) != 0) {
    a->path_mtu = static_cast<nic::PathMtu>(w.path_mtu);
  }
  a->cap = CapFromWire(w.cap);
  PathFromWire(w.ah_attr, &a->ah_attr);
  a->en_sqd_async_notify = w.en_sqd_async_notify;
  a->sq_draining = w.sq_draining;
  return absl::OkStatus();
}

void QpAttrToWire(const nic::QpAttr& a, wire::WireQpAttr* w) {
  *w = wire::WireQpAttr{};
  rocemu::verbs::CopyQpAttrScalars(a, w);
  w->path_mtu = static_cast<uint8_t>(a.path_mtu);
  w->en_sqd_async_notify = a.en_sqd_async_notify;
  w->cap = CapToWire(a.cap);
  PathToWire(a.ah_attr, &w->ah_attr);
  w->sq_draining = a.sq_draining;
}

// A completion-channel fd must be an eventfd: anything else (a pipe, a
// socket) could block the daemon's write.
bool IsEventFd(int fd) {
  char path[64];
  char target[64] = {};
  absl::SNPrintF(path, sizeof(path), "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(path, target, sizeof(target) - 1);
  return n > 0 && std::string_view(target, static_cast<size_t>(n)) ==
                      "anon_inode:[eventfd]";
}

}  // namespace rocemu::verbs
