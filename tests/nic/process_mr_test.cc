// Process-memory regions: registration checks, copies through process_vm_*
// (this process's own pid, and a forked child's to prove the copy crosses
// address spaces), RC WRITE/READ/SEND/atomics between a process region and a
// normal one, and what happens when the target unmaps its pages or dies:
// error completions, NAKs and counters, never a crash.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "nic/process_memory.h"
#include "nic/sg_copy.h"
#include "tests/engine/back_to_back.h"

namespace rocemu::nic::testing {
namespace {

constexpr AccessFlags kAll = access::kLocalWrite | access::kRemoteWrite |
                             access::kRemoteRead | access::kRemoteAtomic;

size_t PageSize() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

// Anonymous private pages of this process (so of a child forked after).
class Pages {
 public:
  explicit Pages(size_t n) : len_(n * PageSize()) {
    void* p = mmap(nullptr, len_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(p, MAP_FAILED);
    p_ = static_cast<uint8_t*>(p);
  }
  ~Pages() { munmap(p_, len_); }
  uint8_t* data() const { return p_; }
  size_t size() const { return len_; }
  uint64_t va(size_t off = 0) const {
    return reinterpret_cast<uint64_t>(p_ + off);
  }
  // Takes the pages away. A PROT_NONE reservation stays at the address so
  // nothing else is mapped there while the test still names it.
  void Unmap() {
    munmap(p_, len_);
    void* p = mmap(p_, len_, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    EXPECT_EQ(p, static_cast<void*>(p_));
  }

 private:
  size_t len_;
  uint8_t* p_;
};

void Pattern(uint8_t* p, size_t len, uint8_t seed) {
  for (size_t i = 0; i < len; ++i) {
    p[i] = static_cast<uint8_t>(seed + i * 13 + (i >> 9));
  }
}

// A forked child that fills `pages` (its private copy) with a pattern,
// reports ready and waits until killed.
class Child {
 public:
  Child(const Pages& pages, uint8_t seed) {
    int ready[2];
    EXPECT_EQ(pipe(ready), 0);
    pid_ = fork();
    if (pid_ == 0) {
      close(ready[0]);
      Pattern(pages.data(), pages.size(), seed);
      const char c = 'r';
      if (write(ready[1], &c, 1) != 1) _exit(2);
      for (;;) pause();
    }
    close(ready[1]);
    char c = 0;
    EXPECT_EQ(read(ready[0], &c, 1), 1);
    close(ready[0]);
  }
  ~Child() { Kill(); }
  pid_t pid() const { return pid_; }
  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
};

// --- registration ------------------------------------------------------------

class ProcessMrTableTest : public ::testing::Test {
 protected:
  ProcessMrTableTest() : pds_(4), mrs_(pds_, 16, uint64_t{1} << 32) {
    pd_ = *pds_.Alloc(kKernelClient);
  }
  PdTable pds_;
  MrTable mrs_;
  PdHandle pd_;
};

TEST_F(ProcessMrTableTest, RegisterSelfMemoryAndCopyThroughIt) {
  std::vector<uint8_t> heap(5000);  // malloc'd, as ibv_reg_mr takes it
  const uint64_t va = reinterpret_cast<uint64_t>(heap.data());
  absl::StatusOr<uint32_t> k =
      mrs_.RegisterProcess(kKernelClient, pd_, getpid(), va, heap.size(), kAll);
  ASSERT_TRUE(k.ok()) << k.status();
  const MemoryRegion* mr = mrs_.Find(*k);
  ASSERT_NE(mr, nullptr);
  EXPECT_EQ(mr->kind(), MrKind::kProcess);
  EXPECT_EQ(mr->pid(), getpid());
  EXPECT_EQ(pds_.UseCount(pd_), 1u);
  HostSegment seg[2];
  uint64_t covered = 99;
  EXPECT_EQ(mr->Translate(va, 10, seg, &covered), 0u);
  EXPECT_EQ(covered, 0u);

  std::vector<uint8_t> src(3000);
  Pattern(src.data(), src.size(), 5);
  ASSERT_EQ(mr->CopyIn(va + 1000, src), MrStatus::kOk);
  EXPECT_EQ(0, std::memcmp(heap.data() + 1000, src.data(), src.size()));
  std::vector<uint8_t> out(2000);
  ASSERT_EQ(mr->CopyOut(va + 1500, out), MrStatus::kOk);
  EXPECT_EQ(0, std::memcmp(out.data(), src.data() + 500, out.size()));
  ASSERT_EQ(mr->Store64(va + 8, 0x0102030405060708ull), MrStatus::kOk);
  uint64_t v = 0;
  ASSERT_EQ(mr->Load64(va + 8, &v), MrStatus::kOk);
  EXPECT_EQ(v, 0x0102030405060708ull);
  uint64_t direct;
  std::memcpy(&direct, heap.data() + 8, 8);
  EXPECT_EQ(direct, 0x0102030405060708ull);

  ASSERT_TRUE(mrs_.Deregister(kKernelClient, *k).ok());
  EXPECT_EQ(mrs_.Find(*k), nullptr);
  EXPECT_EQ(pds_.UseCount(pd_), 0u);
}

TEST_F(ProcessMrTableTest, RegistrationRefusesWhatCannotBeReached) {
  Pages pages(2);
  const pid_t self = getpid();
  // Last byte beyond the mapping (the page after it is not ours).
  Pages hole(1);
  hole.Unmap();
  absl::StatusOr<uint32_t> k =
      mrs_.RegisterProcess(kKernelClient, pd_, self, hole.va(), 64, kAll);
  EXPECT_EQ(k.status().code(), absl::StatusCode::kInvalidArgument)
      << k.status();
  // A hole in the middle of the range.
  Pages three(3);
  ASSERT_EQ(munmap(three.data() + PageSize(), PageSize()), 0);
  k = mrs_.RegisterProcess(kKernelClient, pd_, self, three.va(), three.size(),
                           kAll);
  EXPECT_EQ(k.status().code(), absl::StatusCode::kInvalidArgument)
      << k.status();
  EXPECT_NE(k.status().message().find("not mapped"), std::string::npos)
      << k.status();
  // Read-only pages: fine for a read-only region, refused for a writable
  // one.
  ASSERT_EQ(mprotect(pages.data(), pages.size(), PROT_READ), 0);
  k = mrs_.RegisterProcess(kKernelClient, pd_, self, pages.va(), pages.size(),
                           kAll);
  EXPECT_EQ(k.status().code(), absl::StatusCode::kInvalidArgument)
      << k.status();
  k = mrs_.RegisterProcess(kKernelClient, pd_, self, pages.va(), pages.size(),
                           access::kRemoteRead);
  ASSERT_TRUE(k.ok()) << k.status();
  ASSERT_TRUE(mrs_.Deregister(kKernelClient, *k).ok());
  ASSERT_EQ(mprotect(pages.data(), pages.size(), PROT_READ | PROT_WRITE), 0);
  // A process that no longer exists: a reaped child's pid.
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  ASSERT_EQ(waitpid(gone, nullptr, 0), gone);
  k = mrs_.RegisterProcess(kKernelClient, pd_, gone, pages.va(), 64, kAll);
  EXPECT_EQ(k.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(k.status().message().find("no process"), std::string::npos);
  EXPECT_EQ(mrs_.RegisterProcess(kKernelClient, pd_, 0, pages.va(), 64, kAll)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  // The checks every registration makes.
  EXPECT_EQ(mrs_.RegisterProcess(kKernelClient, pd_, self, pages.va(), 0, kAll)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(mrs_.RegisterProcess(kKernelClient, pd_, self, pages.va(), 64,
                                 access::kRemoteWrite)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      mrs_.RegisterProcess(kKernelClient, pd_ + 1, self, pages.va(), 64, kAll)
          .status()
          .code(),
      absl::StatusCode::kNotFound);
  EXPECT_EQ(mrs_.size(), 0u);
  EXPECT_EQ(pds_.UseCount(pd_), 0u);
}

// ptrace permission: a process of another uid may not reach ours. As root
// the check runs in a child that drops to nobody; otherwise against init.
TEST_F(ProcessMrTableTest, RegistrationWithoutPtraceRightIsPermissionDenied) {
  if (geteuid() != 0) {
    const absl::Status s = ProbeProcessRange(1, 0x10000, 8);
    EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
    return;
  }
  Pages pages(1);
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
    const absl::Status s = ProbeProcessRange(parent, pages.va(), 8);
    _exit(s.code() == absl::StatusCode::kPermissionDenied ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST_F(ProcessMrTableTest, RereregisterWithChunksMakesAHostRegion) {
  Pages pages(1);
  uint32_t k = *mrs_.RegisterProcess(kKernelClient, pd_, getpid(), pages.va(),
                                     pages.size(), kAll);
  std::vector<uint8_t> buf(64, 0x5A);
  const HostChunk c{buf.data(), buf.size()};
  absl::StatusOr<uint32_t> k2 =
      mrs_.Reregister(kKernelClient, k, rereg::kChangeTranslation, 0, 0x4000,
                      64, kAll, {&c, 1});
  ASSERT_TRUE(k2.ok()) << k2.status();
  EXPECT_EQ(mrs_.Find(*k2)->kind(), MrKind::kHost);
  EXPECT_EQ(mrs_.Find(*k2)->pid(), 0);
  uint64_t v = 0;
  ASSERT_EQ(mrs_.Find(*k2)->Load64(0x4000, &v), MrStatus::kOk);
  EXPECT_EQ(v, 0x5A5A5A5A5A5A5A5Aull);
}

TEST_F(ProcessMrTableTest, InvalidateProcessFencesOnlyThatPidsRegions) {
  Pages pages(1);
  const uint32_t kp = *mrs_.RegisterProcess(kKernelClient, pd_, getpid(),
                                            pages.va(), pages.size(), kAll);
  const uint32_t kp2 =
      *mrs_.RegisterProcess(kKernelClient, pd_, getpid(), pages.va(), 64, kAll);
  std::vector<uint8_t> host(64);
  const HostChunk hc{host.data(), host.size()};
  const uint32_t kh =
      *mrs_.Register(kKernelClient, pd_, pages.va(), 64, kAll, {&hc, 1});
  EXPECT_EQ(mrs_.InvalidateProcess(getpid() + 1), 0u);
  EXPECT_EQ(mrs_.InvalidateProcess(getpid()), 2u);
  const MemoryRegion* mr = nullptr;
  EXPECT_EQ(
      mrs_.CheckRemote(kp, pd_, 0, pages.va(), 8, access::kRemoteRead, &mr),
      MrStatus::kInvalidated);
  EXPECT_EQ(mrs_.CheckLocal(kp2, pd_, pages.va(), 8, access::kNone, &mr),
            MrStatus::kInvalidated);
  EXPECT_EQ(
      mrs_.CheckRemote(kh, pd_, 0, pages.va(), 8, access::kRemoteRead, &mr),
      MrStatus::kOk);
  EXPECT_TRUE(mrs_.Deregister(kKernelClient, kp).ok());
  EXPECT_TRUE(mrs_.Deregister(kKernelClient, kp2).ok());
}

// Several process pieces of one SG list travel in one call; a host piece
// between them and a fault in one of them are handled.
TEST_F(ProcessMrTableTest, GatherScatterMixHostAndProcessPieces) {
  Pages pages(3);
  Pattern(pages.data(), pages.size(), 40);
  const uint32_t kp = *mrs_.RegisterProcess(kKernelClient, pd_, getpid(),
                                            pages.va(), pages.size(), kAll);
  std::vector<uint8_t> host(100);
  Pattern(host.data(), host.size(), 200);
  const HostChunk hc{host.data(), host.size()};
  const uint32_t kh =
      *mrs_.Register(kKernelClient, pd_, 0x100000, host.size(), kAll, {&hc, 1});
  const size_t pg = PageSize();
  // Adjacent remote pieces (merge), a jump, a host piece, a process piece.
  SgList sg = {{pages.va(10), 100, kp},
               {pages.va(110), 50, kp},
               {pages.va(2 * pg + 7), 300, kp},
               {0x100000 + 20, 30, kh},
               {pages.va(pg), 20, kp}};
  std::vector<uint8_t> out(500);
  SgCursor cur;
  ASSERT_EQ(Gather(mrs_, pd_, sg.span(), cur, out), MrStatus::kOk);
  std::vector<uint8_t> expect;
  auto add = [&](const uint8_t* p, size_t n) {
    expect.insert(expect.end(), p, p + n);
  };
  add(pages.data() + 10, 150);
  add(pages.data() + 2 * pg + 7, 300);
  add(host.data() + 20, 30);
  add(pages.data() + pg, 20);
  EXPECT_EQ(out, expect);

  // Scatter the reverse pattern back through the same list.
  std::vector<uint8_t> src(500);
  Pattern(src.data(), src.size(), 99);
  cur = {};
  ASSERT_EQ(Scatter(mrs_, pd_, sg.span(), cur, src), MrStatus::kOk);
  EXPECT_EQ(0, std::memcmp(pages.data() + 10, src.data(), 150));
  EXPECT_EQ(0, std::memcmp(pages.data() + 2 * pg + 7, src.data() + 150, 300));
  EXPECT_EQ(0, std::memcmp(host.data() + 20, src.data() + 450, 30));
  EXPECT_EQ(0, std::memcmp(pages.data() + pg, src.data() + 480, 20));

  // The middle page goes read-only: writes to it fault, reads still work.
  ASSERT_EQ(mprotect(pages.data() + pg, pg, PROT_READ), 0);
  cur = {};
  EXPECT_EQ(Scatter(mrs_, pd_, sg.span(), cur, src), MrStatus::kFault);
  cur = {};
  EXPECT_EQ(Gather(mrs_, pd_, sg.span(), cur, out), MrStatus::kOk);
  ASSERT_EQ(mprotect(pages.data() + pg, pg, PROT_NONE), 0);
  cur = {};
  EXPECT_EQ(Gather(mrs_, pd_, sg.span(), cur, out), MrStatus::kFault);
}

// More process pieces than one call's iovec array takes.
TEST(ProcessVmBatch, ManyPiecesFlushInSeveralCalls) {
  std::vector<uint8_t> remote(4096);
  Pattern(remote.data(), remote.size(), 3);
  std::vector<uint8_t> local(40 * 50);
  ProcessVmBatch batch(/*write=*/false);
  for (size_t i = 0; i < 40; ++i) {
    // Every other 50-byte block, so no two remote pieces merge.
    ASSERT_EQ(
        batch.Add(getpid(), local.data() + i * 50,
                  reinterpret_cast<uint64_t>(remote.data() + i * 100), 50),
        MrStatus::kOk);
  }
  ASSERT_EQ(batch.Flush(), MrStatus::kOk);
  for (size_t i = 0; i < 40; ++i) {
    EXPECT_EQ(0,
              std::memcmp(local.data() + i * 50, remote.data() + i * 100, 50))
        << i;
  }
}

// --- through the engines
// -------------------------------------------------------

class ProcessMrEngineTest : public ::testing::Test {
 protected:
  ProcessMrEngineTest() : p_(Connect(net_)) {}

  uint32_t RegB(pid_t pid, uint64_t va, uint64_t len) {
    absl::StatusOr<uint32_t> k =
        net_.b().RegMrProcess(p_.eb.pd, pid, va, len, kAll);
    EXPECT_TRUE(k.ok()) << k.status();
    return k.value_or(0);
  }
  uint32_t RegA(pid_t pid, uint64_t va, uint64_t len) {
    absl::StatusOr<uint32_t> k =
        net_.a().RegMrProcess(p_.ea.pd, pid, va, len, kAll);
    EXPECT_TRUE(k.ok()) << k.status();
    return k.value_or(0);
  }
  void Post(const SendWr& wr) {
    ASSERT_TRUE(net_.a().PostSend(p_.ea.qpn, wr).ok());
  }
  static SendWr Rdma(WrOpcode op, uint64_t wr_id, Sge local, uint64_t raddr,
                     uint32_t rkey) {
    SendWr wr;
    wr.wr_id = wr_id;
    wr.opcode = op;
    wr.send_flags = send_flags::kSignaled;
    wr.sg_list = {local};
    wr.rdma.remote_addr = raddr;
    wr.rdma.rkey = rkey;
    return wr;
  }
  static SendWr AtomicWr(WrOpcode op, uint64_t wr_id, Sge local, uint64_t raddr,
                         uint32_t rkey, uint64_t compare_add, uint64_t swap) {
    SendWr wr;
    wr.wr_id = wr_id;
    wr.opcode = op;
    wr.send_flags = send_flags::kSignaled;
    wr.sg_list = {local};
    wr.atomic.remote_addr = raddr;
    wr.atomic.rkey = rkey;
    wr.atomic.compare_add = compare_add;
    wr.atomic.swap = swap;
    return wr;
  }
  // One completion on A's CQ, of wr_id with `status`.
  void ExpectSendCompletion(uint64_t wr_id, WcStatus status) {
    auto wc = Poll(net_.a(), p_.ea.cq);
    ASSERT_GE(wc.size(), 1u);
    EXPECT_EQ(wc[0].wr_id, wr_id);
    EXPECT_EQ(wc[0].status, status)
        << WcStatusName(wc[0].status) << " != " << WcStatusName(status);
  }
  // The last NAK B sent, or -1.
  int LastNakCode() const {
    int code = -1;
    for (const WireFrame* f :
         net_.Frames(1, protocol::Opcode::kRcAcknowledge)) {
      if (f->parsed.hdr.aeth.type() == protocol::AethType::kNak) {
        code = f->parsed.hdr.aeth.syndrome & 0x1F;
      }
    }
    return code;
  }

  BackToBack net_;
  Pair p_;
};

// On-demand paging: registration needs no page mapped (a pinned region
// over the same hole is refused), a WRITE into a page still missing fails
// with a remote access error, and once the application maps memory there
// the same region works without being registered again. Implicit ODP
// covers the whole address space.
TEST_F(ProcessMrEngineTest, OnDemandRegionsReachPagesAsTheyAreAtAccess) {
  Pages pb(2);
  pb.Unmap();  // a PROT_NONE hole
  EXPECT_EQ(net_.b()
                .RegMrProcess(p_.eb.pd, getpid(), pb.va(), pb.size(), kAll)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<uint32_t> kb = net_.b().RegMrProcess(
      p_.eb.pd, getpid(), pb.va(), pb.size(), kAll | access::kOnDemand);
  ASSERT_TRUE(kb.ok()) << kb.status();
  Fill(p_.ea.buf, 0, 3000, 29);
  Post(Rdma(WrOpcode::kRdmaWrite, 1, SgeOf(p_.ea, 0, 3000), pb.va(64), *kb));
  net_.Run();
  ExpectSendCompletion(1, WcStatus::kRemAccessErr);
  EXPECT_GE(net_.b().QueryCounters().mr_access_faults, 1u);

  // The application maps the range now: an on-demand region reaches it,
  // and so does an implicit one (every address). A fresh QP pair: the
  // failed WRITE moved the first one to the error state.
  ASSERT_EQ(mprotect(pb.data(), pb.size(), PROT_READ | PROT_WRITE), 0);
  Pair q = Connect(net_);
  absl::StatusOr<uint32_t> kq = net_.b().RegMrProcess(
      q.eb.pd, getpid(), pb.va(), pb.size(), kAll | access::kOnDemand);
  absl::StatusOr<uint32_t> ki = net_.b().RegMrProcess(
      q.eb.pd, getpid(), 0, ~uint64_t{0}, kAll | access::kOnDemand);
  ASSERT_TRUE(kq.ok() && ki.ok()) << kq.status() << ki.status();
  Fill(q.ea.buf, 0, 6000, 31);
  ASSERT_TRUE(
      net_.a()
          .PostSend(q.ea.qpn, Rdma(WrOpcode::kRdmaWrite, 2,
                                   SgeOf(q.ea, 0, 3000), pb.va(64), *kq))
          .ok());
  ASSERT_TRUE(
      net_.a()
          .PostSend(q.ea.qpn, Rdma(WrOpcode::kRdmaWrite, 3,
                                   SgeOf(q.ea, 3000, 3000), pb.va(4000), *ki))
          .ok());
  net_.Run();
  auto wc = Poll(net_.a(), q.ea.cq);
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wc[1].status, WcStatus::kSuccess);
  EXPECT_EQ(0, std::memcmp(pb.data() + 64, q.ea.buf.data(), 3000));
  EXPECT_EQ(0, std::memcmp(pb.data() + 4000, q.ea.buf.data() + 3000, 3000));
}

TEST_F(ProcessMrEngineTest, WriteReadSendAtomicsAreByteExact) {
  Pages pb(3);  // B's process region (this process's pid)
  const uint32_t kb = RegB(getpid(), pb.va(), pb.size());
  const uint32_t len = 5000;  // 5 packets at MTU 1024
  Fill(p_.ea.buf, 0, len, 17);

  // WRITE: normal MR on A -> process MR on B.
  Post(Rdma(WrOpcode::kRdmaWrite, 1, SgeOf(p_.ea, 0, len), pb.va(100), kb));
  net_.Run();
  ExpectSendCompletion(1, WcStatus::kSuccess);
  EXPECT_EQ(0, std::memcmp(pb.data() + 100, p_.ea.buf.data(), len));

  // READ: process MR on B -> normal MR on A.
  Pattern(pb.data() + 6000, 4500, 71);
  Post(Rdma(WrOpcode::kRdmaRead, 2, SgeOf(p_.ea, 8000, 4500), pb.va(6000), kb));
  net_.Run();
  ExpectSendCompletion(2, WcStatus::kSuccess);
  EXPECT_EQ(0, std::memcmp(p_.ea.buf.data() + 8000, pb.data() + 6000, 4500));

  // SEND from a process MR on A into a process-MR receive buffer on B,
  // through two SGEs on each side.
  Pages pa(2);
  const uint32_t ka = RegA(getpid(), pa.va(), pa.size());
  Pattern(pa.data(), pa.size(), 3);
  ASSERT_TRUE(net_.b()
                  .PostRecv(p_.eb.qpn, {9,
                                        {Sge{pb.va(2 * PageSize()), 1000, kb},
                                         Sge{pb.va(20), 3000, kb}}})
                  .ok());
  SendWr send;
  send.wr_id = 3;
  send.opcode = WrOpcode::kSend;
  send.send_flags = send_flags::kSignaled;
  send.sg_list = {Sge{pa.va(500), 2500, ka}, Sge{pa.va(4000), 1200, ka}};
  Post(send);
  net_.Run();
  ExpectSendCompletion(3, WcStatus::kSuccess);
  auto rc = Poll(net_.b(), p_.eb.cq);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(rc[0].byte_len, 3700u);
  std::vector<uint8_t> sent(pa.data() + 500, pa.data() + 3000);
  sent.insert(sent.end(), pa.data() + 4000, pa.data() + 5200);
  EXPECT_EQ(0, std::memcmp(pb.data() + 2 * PageSize(), sent.data(), 1000));
  EXPECT_EQ(0, std::memcmp(pb.data() + 20, sent.data() + 1000, 2700));

  // Atomics on the process MR; the original lands in A's normal MR.
  uint64_t init = 1000;
  std::memcpy(pb.data() + 64, &init, 8);
  Post(AtomicWr(WrOpcode::kAtomicFetchAndAdd, 4, SgeOf(p_.ea, 0, 8), pb.va(64),
                kb, 23, 0));
  net_.Run();
  ExpectSendCompletion(4, WcStatus::kSuccess);
  uint64_t v;
  std::memcpy(&v, pb.data() + 64, 8);
  EXPECT_EQ(v, 1023u);
  std::memcpy(&v, p_.ea.buf.data(), 8);
  EXPECT_EQ(v, 1000u);
  Post(AtomicWr(WrOpcode::kAtomicCmpAndSwp, 5, SgeOf(p_.ea, 8, 8), pb.va(64),
                kb, 1023, 77));
  Post(AtomicWr(WrOpcode::kAtomicCmpAndSwp, 6, SgeOf(p_.ea, 16, 8), pb.va(64),
                kb, 1023, 88));  // compare fails now: no swap
  net_.Run();
  auto wc = Poll(net_.a(), p_.ea.cq);
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wc[1].status, WcStatus::kSuccess);
  std::memcpy(&v, pb.data() + 64, 8);
  EXPECT_EQ(v, 77u);
  std::memcpy(&v, p_.ea.buf.data() + 8, 8);
  EXPECT_EQ(v, 1023u);
  std::memcpy(&v, p_.ea.buf.data() + 16, 8);
  EXPECT_EQ(v, 77u);
  // Atomic result into A's process MR.
  Post(AtomicWr(WrOpcode::kAtomicFetchAndAdd, 7, Sge{pa.va(16), 8, ka},
                pb.va(64), kb, 1, 0));
  net_.Run();
  ExpectSendCompletion(7, WcStatus::kSuccess);
  std::memcpy(&v, pa.data() + 16, 8);
  EXPECT_EQ(v, 77u);

  const DeviceCounters ca = net_.a().QueryCounters();
  const DeviceCounters cb = net_.b().QueryCounters();
  EXPECT_EQ(ca.mr_access_faults + cb.mr_access_faults, 0u);
  EXPECT_EQ(net_.a().GetQp(p_.ea.qpn)->state(), QpState::kRts);
  EXPECT_EQ(net_.b().GetQp(p_.eb.qpn)->state(), QpState::kRts);
}

// The region lives in a forked child: bytes move between its address space
// and ours; when it dies, accesses fail with a remote access error.
TEST_F(ProcessMrEngineTest, ChildProcessRegionThenChildKilled) {
  Pages shared_va(2);  // same address in parent and child, private pages
  std::memset(shared_va.data(), 0, shared_va.size());
  Child child(shared_va, 55);
  const uint32_t kb = RegB(child.pid(), shared_va.va(), shared_va.size());

  // READ the child's pattern: our own copy of the pages is still zero.
  Post(
      Rdma(WrOpcode::kRdmaRead, 1, SgeOf(p_.ea, 0, 6000), shared_va.va(0), kb));
  net_.Run();
  ExpectSendCompletion(1, WcStatus::kSuccess);
  std::vector<uint8_t> expect(6000);
  Pattern(expect.data(), expect.size(), 55);
  EXPECT_EQ(0, std::memcmp(p_.ea.buf.data(), expect.data(), 6000));
  EXPECT_EQ(shared_va.data()[1], 0);

  // WRITE into the child, checked by reading its memory directly.
  Fill(p_.ea.buf, 10000, 3000, 91);
  Post(Rdma(WrOpcode::kRdmaWrite, 2, SgeOf(p_.ea, 10000, 3000),
            shared_va.va(1000), kb));
  net_.Run();
  ExpectSendCompletion(2, WcStatus::kSuccess);
  std::vector<uint8_t> got(3000);
  ASSERT_EQ(ProcessRead(child.pid(), shared_va.va(1000), got), MrStatus::kOk);
  EXPECT_EQ(0, std::memcmp(got.data(), p_.ea.buf.data() + 10000, 3000));
  EXPECT_EQ(shared_va.data()[1000], 0);

  // The child dies; the key is still registered.
  child.Kill();
  Post(
      Rdma(WrOpcode::kRdmaWrite, 3, SgeOf(p_.ea, 0, 100), shared_va.va(0), kb));
  net_.Run();
  ExpectSendCompletion(3, WcStatus::kRemAccessErr);
  EXPECT_EQ(LastNakCode(),
            static_cast<int>(protocol::NakCode::kRemoteAccessError));
  const DeviceCounters cb = net_.b().QueryCounters();
  EXPECT_EQ(cb.mr_access_faults, 1u);
  EXPECT_EQ(cb.resp_remote_access_errors, 1u);
  EXPECT_EQ(net_.b().GetQp(p_.eb.qpn)->state(), QpState::kErr);
  EXPECT_EQ(net_.a().GetQp(p_.ea.qpn)->state(), QpState::kErr);
  EXPECT_EQ(net_.a().QueryCounters().req_remote_access_errors, 1u);
  // The region can still be deregistered.
  EXPECT_TRUE(net_.b().DeregMr(kb).ok());
}

TEST_F(ProcessMrEngineTest, ReadOfUnmappedPagesIsNakedWithRemoteAccessError) {
  Pages pb(2);
  const uint32_t kb = RegB(getpid(), pb.va(), pb.size());
  pb.Unmap();
  Post(Rdma(WrOpcode::kRdmaRead, 1, SgeOf(p_.ea, 0, 3000), pb.va(0), kb));
  net_.Run();
  ExpectSendCompletion(1, WcStatus::kRemAccessErr);
  EXPECT_EQ(LastNakCode(),
            static_cast<int>(protocol::NakCode::kRemoteAccessError));
  EXPECT_TRUE(
      net_.Frames(1, protocol::Opcode::kRcRdmaReadResponseFirst).empty());
  const DeviceCounters cb = net_.b().QueryCounters();
  EXPECT_EQ(cb.mr_access_faults, 1u);
  EXPECT_EQ(cb.resp_remote_access_errors, 1u);
}

TEST_F(ProcessMrEngineTest, AtomicOnReadOnlyPageFailsWithoutChangingIt) {
  Pages pb(1);
  const uint32_t kb = RegB(getpid(), pb.va(), pb.size());
  uint64_t init = 5;
  std::memcpy(pb.data() + 8, &init, 8);
  ASSERT_EQ(mprotect(pb.data(), pb.size(), PROT_READ), 0);
  Post(AtomicWr(WrOpcode::kAtomicFetchAndAdd, 1, SgeOf(p_.ea, 0, 8), pb.va(8),
                kb, 1, 0));
  net_.Run();
  ExpectSendCompletion(1, WcStatus::kRemAccessErr);
  uint64_t v;
  std::memcpy(&v, pb.data() + 8, 8);
  EXPECT_EQ(v, 5u);
  EXPECT_EQ(net_.b().QueryCounters().mr_access_faults, 1u);
  EXPECT_EQ(LastNakCode(),
            static_cast<int>(protocol::NakCode::kRemoteAccessError));
}

TEST_F(ProcessMrEngineTest, LocalFaultsCompleteWithLocalProtectionError) {
  // Gather: a SEND from a process MR whose pages are gone.
  Pages pa(1);
  const uint32_t ka = RegA(getpid(), pa.va(), pa.size());
  pa.Unmap();
  ASSERT_TRUE(net_.b().PostRecv(p_.eb.qpn, {1, {SgeOf(p_.eb, 0, 4096)}}).ok());
  SendWr send;
  send.wr_id = 11;
  send.opcode = WrOpcode::kSend;
  send.send_flags = send_flags::kSignaled;
  send.sg_list = {Sge{pa.va(0), 64, ka}};
  Post(send);
  net_.Run();
  ExpectSendCompletion(11, WcStatus::kLocProtErr);
  EXPECT_EQ(net_.a().QueryCounters().mr_access_faults, 1u);
  EXPECT_TRUE(net_.Frames(0).empty());  // nothing was sent
  EXPECT_EQ(net_.a().GetQp(p_.ea.qpn)->state(), QpState::kErr);
}

TEST_F(ProcessMrEngineTest, ReadResponseIntoUnmappedLocalRegion) {
  // Scatter at the completer: the READ's destination pages are gone.
  Pages pa(1);
  const uint32_t ka = RegA(getpid(), pa.va(), pa.size());
  pa.Unmap();
  Post(Rdma(WrOpcode::kRdmaRead, 12, Sge{pa.va(0), 128, ka}, Va(p_.eb, 0),
            p_.eb.key));
  net_.Run();
  ExpectSendCompletion(12, WcStatus::kLocProtErr);
  EXPECT_EQ(net_.a().QueryCounters().mr_access_faults, 1u);
  EXPECT_EQ(net_.b().QueryCounters().mr_access_faults, 0u);
}

TEST_F(ProcessMrEngineTest, SendIntoUnmappedReceiveBufferFailsTheReceive) {
  Pages pb(1);
  const uint32_t kb = RegB(getpid(), pb.va(), pb.size());
  pb.Unmap();
  ASSERT_TRUE(
      net_.b().PostRecv(p_.eb.qpn, {21, {Sge{pb.va(0), 256, kb}}}).ok());
  SendWr send;
  send.wr_id = 13;
  send.opcode = WrOpcode::kSend;
  send.send_flags = send_flags::kSignaled;
  send.sg_list = {SgeOf(p_.ea, 0, 100)};
  Post(send);
  net_.Run();
  auto rc = Poll(net_.b(), p_.eb.cq);
  ASSERT_GE(rc.size(), 1u);
  EXPECT_EQ(rc[0].wr_id, 21u);
  EXPECT_EQ(rc[0].status, WcStatus::kLocProtErr);
  EXPECT_EQ(net_.b().QueryCounters().mr_access_faults, 1u);
  auto sc = Poll(net_.a(), p_.ea.cq);
  ASSERT_GE(sc.size(), 1u);
  EXPECT_EQ(sc[0].wr_id, 13u);
  EXPECT_NE(sc[0].status, WcStatus::kSuccess);
}

}  // namespace
}  // namespace rocemu::nic::testing
