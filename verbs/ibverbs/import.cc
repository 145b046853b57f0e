// The import verbs and the registry behind them (import.h).
#include "verbs/ibverbs/import.h"

#include <sys/stat.h>
#include <unistd.h>

#include <mutex>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "verbs/client/client_objects.h"

namespace rocemu::ibverbs {
namespace {

struct Session {
  DevImpl* dev;
  pid_t pid;  // a forked child has the record, not the session
  dev_t st_dev;
  ino_t st_ino;
  int contexts;
};
using Key = std::pair<const rocemu_context*, uint32_t>;

struct Registry {
  std::mutex mu;
  absl::flat_hash_map<const rocemu_context*, Session> sessions;
  absl::flat_hash_map<Key, bool> pds;
  absl::flat_hash_map<Key, MrFacts> mrs;
  absl::flat_hash_map<Key, std::shared_ptr<DmShared>> dms;
};

Registry& Reg() {
  static auto* r = new Registry;  // lives as long as the process's objects
  return *r;
}

}  // namespace

void RegisterSession(rocemu_context* rc, DevImpl* dev) {
  struct stat st {};
  // An embedded context has no socket: there is nothing to import through.
  if (rc->fd < 0 || fstat(rc->fd, &st) != 0) return;
  std::lock_guard<std::mutex> lock(Reg().mu);
  Reg().sessions[rc] = Session{dev, getpid(), st.st_dev, st.st_ino, 1};
}

rocemu_context* AcquireSession(int cmd_fd, DevImpl** dev) {
  struct stat st {};
  if (fstat(cmd_fd, &st) != 0) return nullptr;
  std::lock_guard<std::mutex> lock(Reg().mu);
  for (auto& [rc, s] : Reg().sessions) {
    if (s.st_dev == st.st_dev && s.st_ino == st.st_ino && s.pid == getpid()) {
      ++s.contexts;
      *dev = s.dev;
      return const_cast<rocemu_context*>(rc);
    }
  }
  return nullptr;
}

bool ReleaseSession(rocemu_context* rc) {
  std::lock_guard<std::mutex> lock(Reg().mu);
  Registry& r = Reg();
  auto it = r.sessions.find(rc);
  if (it == r.sessions.end()) return true;  // never importable
  if (--it->second.contexts > 0) return false;
  r.sessions.erase(it);
  // The session's objects go with it (the daemon frees them at hang-up).
  absl::erase_if(r.pds, [rc](const auto& e) { return e.first.first == rc; });
  absl::erase_if(r.mrs, [rc](const auto& e) { return e.first.first == rc; });
  absl::erase_if(r.dms, [rc](const auto& e) { return e.first.first == rc; });
  return true;
}

void RegisterPd(const PdImpl* p) {
  std::lock_guard<std::mutex> lock(Reg().mu);
  Reg().pds[Key{p->rp->ctx, p->rp->handle}] = true;
}

bool PdExists(rocemu_context* rc, uint32_t handle) {
  std::lock_guard<std::mutex> lock(Reg().mu);
  return Reg().pds.contains(Key{rc, handle});
}

void ForgetPd(rocemu_context* rc, uint32_t handle) {
  std::lock_guard<std::mutex> lock(Reg().mu);
  Reg().pds.erase(Key{rc, handle});
}

void RegisterMr(const MrImpl* m) {
  const rocemu_mr* rm = m->rm;
  std::lock_guard<std::mutex> lock(Reg().mu);
  Reg().mrs[Key{rm->pd->ctx, rm->lkey}] =
      MrFacts{rm->pd->handle, rm->addr,   rm->length, rm->lkey,
              rm->rkey,       rm->access, m->dm};
}

std::optional<MrFacts> FindMr(rocemu_context* rc, uint32_t handle) {
  std::lock_guard<std::mutex> lock(Reg().mu);
  auto it = Reg().mrs.find(Key{rc, handle});
  if (it == Reg().mrs.end()) return std::nullopt;
  return it->second;
}

void ForgetMr(rocemu_context* rc, uint32_t handle) {
  std::lock_guard<std::mutex> lock(Reg().mu);
  Reg().mrs.erase(Key{rc, handle});
}

void RegisterDm(rocemu_context* rc, uint32_t handle,
                std::shared_ptr<DmShared> dm) {
  std::lock_guard<std::mutex> lock(Reg().mu);
  Reg().dms[Key{rc, handle}] = std::move(dm);
}

std::shared_ptr<DmShared> FindDm(rocemu_context* rc, uint32_t handle) {
  std::lock_guard<std::mutex> lock(Reg().mu);
  auto it = Reg().dms.find(Key{rc, handle});
  return it == Reg().dms.end() ? nullptr : it->second;
}

void ForgetDm(rocemu_context* rc, uint32_t handle) {
  std::lock_guard<std::mutex> lock(Reg().mu);
  Reg().dms.erase(Key{rc, handle});
}

}  // namespace rocemu::ibverbs

using namespace rocemu::ibverbs;  // NOLINT: the exported functions below

extern "C" {

// A second handle on a PD of the context's session: its own wrapper and
// client record, the daemon's PD. Destroying it (ibv_dealloc_pd) destroys
// the PD for every handle; ibv_unimport_pd drops only this handle.
ibv_pd* ibv_import_pd(ibv_context* context, uint32_t pd_handle) {
  CtxImpl* ctx = Ctx(context);
  if (Dead(ctx)) return FailNull<ibv_pd>(EIO);
  if (!PdExists(ctx->rc, pd_handle)) return FailNull<ibv_pd>(EINVAL);
  auto* p = new PdImpl{};
  p->rp = new rocemu_pd{ctx->rc, pd_handle};
  p->pd.context = context;
  p->pd.handle = pd_handle;
  return &p->pd;
}

void ibv_unimport_pd(ibv_pd* pd) {
  if (pd == nullptr) return;
  PdImpl* p = Pd(pd);
  if (p->protection_domain != nullptr) return;  // a parent domain: not ours
  delete p->rp;
  delete p;
}

// The MR's handle is its L_Key (ibv_mr::handle). The imported MR's addr is
// NULL, as the import verb documents; length and keys are the region's.
ibv_mr* ibv_import_mr(ibv_pd* pd, uint32_t mr_handle) {
  PdImpl* p = Pd(pd);
  CtxImpl* ctx = Ctx(pd->context);
  if (Dead(ctx)) return FailNull<ibv_mr>(EIO);
  const std::optional<MrFacts> f = FindMr(ctx->rc, mr_handle);
  if (!f.has_value() || f->pd_handle != p->rp->handle) {
    return FailNull<ibv_mr>(EINVAL);
  }
  auto* m = new MrImpl{};
  m->rm = new rocemu_mr{p->rp, f->addr, f->length, f->lkey, f->rkey, f->access};
  m->mr.context = pd->context;
  m->mr.pd = pd;
  m->mr.addr = nullptr;
  m->mr.length = f->length;
  m->mr.handle = f->lkey;
  m->mr.lkey = f->lkey;
  m->mr.rkey = f->rkey;
  m->dm = f->dm;  // deregistering through this handle releases the DM
  return &m->mr;
}

void ibv_unimport_mr(ibv_mr* mr) {
  if (mr == nullptr) return;
  MrImpl* m = Mr(mr);
  delete m->rm;
  delete m;
}

}  // extern "C"
