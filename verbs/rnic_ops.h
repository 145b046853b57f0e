// Rnic operations the session server needs whose RNIC side is being added
// in nic/ at the same time (destroy/dealloc of CQs, PDs, AHs and SRQs,
// SRQ modify/query, the solicited flag of a receive completion). Each
// wrapper uses the Rnic's call when it exists and answers Unimplemented
// otherwise, so that the server compiles against either; once nic/ has
// them all, these collapse to direct calls.
#ifndef ROCEMU_VERBS_RNIC_OPS_H_
#define ROCEMU_VERBS_RNIC_OPS_H_

#include <sys/types.h>

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nic/access.h"
#include "nic/completion.h"
#include "nic/handles.h"
#include "nic/shared_receive_queue.h"

namespace rocemu::verbs::rnic_ops {

// MrTable::RegisterProcess: [iova, iova + length) of process `pid`.
template <typename T>
absl::StatusOr<uint32_t> RegisterProcess(T& mrs, nic::ClientId client,
                                         nic::PdHandle pd, pid_t pid,
                                         uint64_t iova, uint64_t length,
                                         nic::AccessFlags access) {
  if constexpr (requires {
                  mrs.RegisterProcess(client, pd, pid, iova, length, access);
                }) {
    return mrs.RegisterProcess(client, pd, pid, iova, length, access);
  } else {
    return absl::UnimplementedError("MrTable::RegisterProcess");
  }
}

template <typename R>
absl::Status DestroyCq(R& rnic, nic::CqHandle h) {
  if constexpr (requires { rnic.DestroyCq(h); }) {
    return rnic.DestroyCq(h);
  } else {
    return absl::UnimplementedError("Rnic::DestroyCq");
  }
}

template <typename R>
absl::Status DeallocPd(R& rnic, nic::PdHandle h) {
  if constexpr (requires { rnic.DeallocPd(h); }) {
    return rnic.DeallocPd(h);
  } else {
    return absl::UnimplementedError("Rnic::DeallocPd");
  }
}

template <typename R>
absl::Status DestroyAh(R& rnic, nic::AhHandle h) {
  if constexpr (requires { rnic.DestroyAh(h); }) {
    return rnic.DestroyAh(h);
  } else {
    return absl::UnimplementedError("Rnic::DestroyAh");
  }
}

template <typename R>
absl::Status DestroySrq(R& rnic, nic::SrqHandle h) {
  if constexpr (requires { rnic.DestroySrq(h); }) {
    return rnic.DestroySrq(h);
  } else {
    return absl::UnimplementedError("Rnic::DestroySrq");
  }
}

template <typename R>
absl::Status ModifySrq(R& rnic, nic::SrqHandle h, const nic::SrqAttr& attr,
                       uint32_t mask) {
  if constexpr (requires { rnic.ModifySrq(h, attr, mask); }) {
    return rnic.ModifySrq(h, attr, mask);
  } else {
    return absl::UnimplementedError("Rnic::ModifySrq");
  }
}

template <typename R>
absl::StatusOr<nic::SrqAttr> QuerySrq(const R& rnic, nic::SrqHandle h) {
  if constexpr (requires { rnic.QuerySrq(h); }) {
    return rnic.QuerySrq(h);
  } else {
    return absl::UnimplementedError("Rnic::QuerySrq");
  }
}

// Whether a receive completion was for a message with the solicited event
// bit. Without the flag in nic::WorkCompletion every receive counts (extra
// wake-ups of a solicited-only arm, never a lost one).
template <typename Wc>
bool Solicited(const Wc& wc) {
  if constexpr (requires { wc.solicited; }) {
    return wc.solicited;
  } else {
    return nic::IsRecvOpcode(wc.opcode);
  }
}

}  // namespace rocemu::verbs::rnic_ops

#endif  // ROCEMU_VERBS_RNIC_OPS_H_
