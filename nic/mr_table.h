// Memory registration and key translation. A key is (slot index << 8) | key
// byte; the key byte changes on every registration that reuses a slot and
// on every re-registration, so a key that outlived its region is refused.
// L_Key and R_Key are the same value (as rxe and ConnectX hand them out).
// Lookup is one array index plus a full-key compare.
#ifndef ROCEMU_NIC_MR_TABLE_H_
#define ROCEMU_NIC_MR_TABLE_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <span>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nic/access.h"
#include "nic/handle_table.h"
#include "nic/handles.h"
#include "nic/memory_region.h"
#include "nic/mr_status.h"
#include "nic/pd_table.h"

namespace rocemu::nic {

// ibv_rereg_send_flags.
namespace rereg {
inline constexpr uint32_t kChangeTranslation = 1u << 0;
inline constexpr uint32_t kChangePd = 1u << 1;
inline constexpr uint32_t kChangeAccess = 1u << 2;
}  // namespace rereg

// IBV_WR_BIND_MW / ibv_bind_mw.
struct MwBind {
  uint32_t mw_rkey = 0;   // the window's current key
  uint32_t new_rkey = 0;  // its key after the bind
  uint32_t mr_lkey = 0;   // the region bound into (0 with length 0)
  uint64_t addr = 0;
  uint64_t length = 0;
  AccessFlags access = 0;  // remote rights the window grants
  uint8_t type = 2;        // 1: ibv_bind_mw, 2: ibv_post_send
};

class MrTable {
 public:
  // `pds` must outlive the table; regions hold a reference on their PD.
  MrTable(PdTable& pds, uint32_t max_mr, uint64_t max_mr_size);

  // ibv_reg_mr: the chunks, laid end to end, back exactly `length` bytes
  // starting at `iova` (0 bytes: a region that grants no access, as a
  // zero-length DM MR). Returns the key. InvalidArgument for inconsistent
  // access flags, iova + length wrapping or chunks not
  // covering the length; NotFound for a PD that is not the client's;
  // ResourceExhausted beyond max_mr.
  absl::StatusOr<uint32_t> Register(ClientId client, PdHandle pd, uint64_t iova,
                                    uint64_t length, AccessFlags access,
                                    std::span<const HostChunk> chunks);
  // ibv_reg_mr of arbitrary memory of another process: [iova, iova +
  // length) of process `pid`'s address space, reached with
  // process_vm_readv/writev (nic/process_memory.h). The range is probed
  // now (ProbeProcessRange; writable pages when `access` has local write):
  // PermissionDenied when ptrace access to `pid` is refused,
  // InvalidArgument for no such process or a range not mapped with the
  // rights needed, and the errors of Register. With access::kOnDemand
  // (ODP, implicit ODP included: iova 0, length 2^64-1) nothing need be
  // mapped yet (ProbeProcessAccess). Later faults (pages unmapped,
  // process gone) fail the accesses, not the RNIC. A pid outlives its process
  // only until the owner deregisters; the daemon does so when the client
  // disconnects.
  absl::StatusOr<uint32_t> RegisterProcess(ClientId client, PdHandle pd,
                                           pid_t pid, uint64_t iova,
                                           uint64_t length, AccessFlags access);
  // Fences off every process region of `pid` (accesses fail with
  // kInvalidated until deregistered) and returns how many there were. The
  // daemon calls it as soon as it learns the process exited, so that its
  // pid, once reused by another process, is never written through a stale
  // region.
  uint32_t InvalidateProcess(pid_t pid);
  // ibv_dereg_mr.
  absl::Status Deregister(ClientId client, uint32_t key);
  // ibv_rereg_mr: changes what `flags` says (translation: iova, length,
  // chunks; PD; access) and returns the region's new key; the old key is
  // refused from now on. On error the region is unchanged. A new
  // translation makes a process region a host region. With `keep_key` the
  // key stays (what rxe and ConnectX do for a PD or access change, so a
  // peer holding the R_Key keeps using it).
  absl::StatusOr<uint32_t> Reregister(ClientId client, uint32_t key,
                                      uint32_t flags, PdHandle pd,
                                      uint64_t iova, uint64_t length,
                                      AccessFlags access,
                                      std::span<const HostChunk> chunks,
                                      bool keep_key = false);

  // The region with exactly this key, or nullptr (hot path).
  const MemoryRegion* Find(uint32_t key) const { return mrs_.Get(key); }

  // L_Key check of a local SGE / buffer: key, PD, rights `need` (local
  // read is implicit; pass access::kLocalWrite for a destination), bounds.
  // len == 0 needs no key (nothing is accessed) and yields *out = nullptr.
  // A window's key is never an L_Key.
  MrStatus CheckLocal(uint32_t lkey, PdHandle pd, uint64_t va, uint64_t len,
                      AccessFlags need, const MemoryRegion** out) const {
    return Check(lkey, pd, /*qpn=*/0, va, len, need, /*atomic=*/false,
                 /*remote=*/false, out);
  }
  // R_Key check of an incoming request on QP `qpn`: `need` is
  // kRemoteWrite, kRemoteRead or kRemoteAtomic; atomics also need an 8-byte
  // aligned 8-byte target. len == 0 (zero-length RDMA) needs no key, as
  // IBTA says. A window's key is checked against the window (bound, its
  // range and rights, a type 2 window's QP) and *out is the region behind
  // it, which translates the same addresses.
  MrStatus CheckRemote(uint32_t rkey, PdHandle pd, uint32_t qpn, uint64_t va,
                       uint64_t len, AccessFlags need,
                       const MemoryRegion** out) const {
    return Check(rkey, pd, qpn, va, len, need,
                 (need & access::kRemoteAtomic) != 0, /*remote=*/true, out);
  }
  // An 8-byte, 8-byte aligned target with `need`: the atomics, and ATOMIC
  // WRITE (which needs kRemoteWrite).
  MrStatus CheckRemote8(uint32_t rkey, PdHandle pd, uint32_t qpn, uint64_t va,
                        AccessFlags need, const MemoryRegion** out) const {
    return Check(rkey, pd, qpn, va, 8, need, /*atomic=*/true, /*remote=*/true,
                 out);
  }
  // FLUSH (IBTA 1.5): its R_Key is checked even for an empty range, and a
  // FLUSH of the whole region (`whole_region`) checks no range at all.
  MrStatus CheckRemoteFlush(uint32_t rkey, PdHandle pd, uint32_t qpn,
                            uint64_t va, uint64_t len, bool whole_region,
                            AccessFlags need, const MemoryRegion** out) const;

  // Lets SEND_WITH_INV invalidate the region, as a kernel ULP's
  // fast-registration region (ib_alloc_mr + IB_WR_REG_MR) allows.
  absl::Status AllowRemoteInvalidate(ClientId client, uint32_t key);
  // SEND_WITH_INV from the wire, received on QP `qpn`: a type 2 window
  // bound to that QP is unbound; a remotely invalidatable region is marked
  // invalid (accesses through the key fail with kInvalidated until it is
  // re-registered). kInvalidKey unless the key is live, kPdMismatch
  // outside `pd`, kAccessDenied for anything else (ibv_reg_mr regions,
  // type 1 windows, a window of another QP).
  MrStatus Invalidate(uint32_t key, PdHandle pd, uint32_t qpn);

  // Memory windows (memory_window.cc). Windows share the key space and
  // the max_mr budget with regions.
  // ibv_alloc_mw: an unbound window of type 1 or 2 in `pd`; returns its
  // R_Key.
  absl::StatusOr<uint32_t> AllocMw(ClientId client, PdHandle pd, uint8_t type);
  // ibv_dealloc_mw, by the key's index (any key byte): a bound window is
  // unbound first.
  absl::Status DeallocMw(ClientId client, uint32_t rkey);
  // IBV_WR_BIND_MW processed on QP `qpn` (PD `pd`), IBTA 10.6.7.2: binds
  // window `b.mw_rkey` to [addr, addr + length) of region `b.mr_lkey`
  // with `b.access`, re-keyed to `b.new_rkey` (same index, new key byte).
  // Length 0 unbinds a type 1 window. kOk, or what fails the bind
  // (the WR then completes with IBV_WC_MW_BIND_ERR).
  MrStatus BindMw(const MwBind& b, PdHandle pd, uint32_t qpn);
  // IBV_WR_LOCAL_INV processed on QP `qpn`: unbinds a type 2 window bound
  // to that QP, or invalidates a remotely invalidatable region.
  MrStatus LocalInvalidate(uint32_t key, PdHandle pd, uint32_t qpn);

  uint32_t size() const { return mrs_.size(); }

 private:
  MrStatus Check(uint32_t key, PdHandle pd, uint32_t qpn, uint64_t va,
                 uint64_t len, AccessFlags need, bool atomic, bool remote,
                 const MemoryRegion** out) const;
  static void Unbind(MemoryRegion& mw);
  absl::Status ValidateLayout(uint64_t iova, uint64_t length,
                              AccessFlags access,
                              std::span<const HostChunk> chunks) const;
  absl::Status ValidateRange(uint64_t iova, uint64_t length, AccessFlags access,
                             bool allow_empty = false) const;
  absl::StatusOr<uint32_t> Insert(ClientId client, PdHandle pd,
                                  std::unique_ptr<MemoryRegion> mr);

  PdTable& pds_;
  uint64_t max_mr_size_;
  HandleTable<MemoryRegion> mrs_;
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_MR_TABLE_H_
