// Memory regions over arbitrary application memory (malloc'd, mmap'd), in
// both forms the library gives them: moved onto a memfd the daemon maps
// (the default, client_remap.h) or reached by the daemon with
// process_vm_readv/writev (ROCEMU_MR_REMAP=0). WRITE, READ, SEND and an
// inbound WRITE byte-exact either way. A region the application unmapped:
// a process region fails the work request (not the daemon); a moved one
// keeps its pages for the RNIC, as pinned memory does.
#include <errno.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/verbs/session_fixture.h"

namespace rocemu::verbs::testing {
namespace {

#define CHILD_CHECK(cond, code) \
  do {                          \
    if (!(cond)) _exit(code);   \
  } while (0)

struct ProcessInfo {
  uint32_t qpn = 0;
  uint32_t rkey = 0;
  uint64_t addr = 0;  // the malloc'd region
};

constexpr size_t kRegion = 1 << 16;
constexpr uint32_t kWriteLen = 10000, kReadLen = 5000, kSendLen = 3000,
                   kInLen = 2000;
constexpr size_t kReadAt = 32768, kRecvAt = 49152, kInAt = 12288;
constexpr size_t kPeerReadSrc = 20000, kPeerSendSrc = 40000, kPeerInSrc = 50000,
                 kPeerUntouched = 30000;

rocemu_wc PostAndWait(const ClientObjs& o, rocemu_send_wr* wr) {
  rocemu_send_wr* bad = nullptr;
  if (rocemu_post_send(o.qp, wr, &bad) != 0) _exit(kPostSend);
  return PollCompletion(o);
}

class MemoryRegionTest : public VerbsSessionTest {
 protected:
  void Run(bool moved);
};

TEST_F(MemoryRegionTest, ProcessMemoryRegionsEndToEnd) { Run(false); }

TEST_F(MemoryRegionTest, MovedMemoryRegionsEndToEnd) { Run(true); }

void MemoryRegionTest::Run(bool moved) {
  StartServer();
  Endpoint eb = MakePeer();
  const Peer peer = PeerOf(eb);
  for (size_t i = 0; i < kReadLen; ++i)
    eb.buf[kPeerReadSrc + i] = Pattern(i, 5);
  const std::string path = path_;
  int from_child, to_child;
  const pid_t pid = Fork(
      [&](int up, int down) {
        if (!moved) setenv("ROCEMU_MR_REMAP", "0", 1);
        ClientObjs o = OpenClient(path, 4096);
        auto* m = static_cast<uint8_t*>(std::malloc(kRegion));
        CHILD_CHECK(m != nullptr, kBuf);
        std::memset(m, 0, kRegion);
        rocemu_mr* mr = rocemu_reg_mr(o.pd, m, kRegion,
                                      ROCEMU_ACCESS_LOCAL_WRITE |
                                          ROCEMU_ACCESS_REMOTE_WRITE |
                                          ROCEMU_ACCESS_REMOTE_READ);
        CHILD_CHECK(mr != nullptr && mr->addr == m && mr->length == kRegion,
                    kMr);
        ConnectClient(o, peer);
        ProcessInfo info{rocemu_qp_num(o.qp), mr->rkey,
                         reinterpret_cast<uint64_t>(m)};
        // The receive goes first so that B's SEND finds it.
        rocemu_sge rsge{reinterpret_cast<uint64_t>(m + kRecvAt), 4096,
                        mr->lkey};
        rocemu_recv_wr rwr{9, nullptr, &rsge, 1};
        rocemu_recv_wr* bad_r = nullptr;
        CHILD_CHECK(rocemu_post_recv(o.qp, &rwr, &bad_r) == 0, kPostRecv);
        WriteAll(up, &info, sizeof(info));
        char step;
        ReadAll(down, &step, 1);  // B is connected

        // WRITE out of malloc'd memory, two SGEs.
        for (size_t i = 0; i < kWriteLen; ++i) m[i] = Pattern(i, 3);
        rocemu_sge sges[2] = {
            {reinterpret_cast<uint64_t>(m), 4000, mr->lkey},
            {reinterpret_cast<uint64_t>(m + 4000), kWriteLen - 4000, mr->lkey}};
        rocemu_send_wr wr = RdmaWriteWr(1, sges, 2, peer);
        rocemu_wc wc = PostAndWait(o, &wr);
        CHILD_CHECK(wc.wr_id == 1 && wc.status == ROCEMU_WC_SUCCESS, kWriteWc);

        // READ into malloc'd memory.
        rocemu_sge rd{reinterpret_cast<uint64_t>(m + kReadAt), kReadLen,
                      mr->lkey};
        wr.wr_id = 2;
        wr.sg_list = &rd;
        wr.num_sge = 1;
        wr.opcode = ROCEMU_WR_RDMA_READ;
        wr.wr.rdma.remote_addr = peer.addr + kPeerReadSrc;
        wc = PostAndWait(o, &wr);
        CHILD_CHECK(wc.wr_id == 2 && wc.status == ROCEMU_WC_SUCCESS &&
                        wc.opcode == ROCEMU_WC_RDMA_READ,
                    20);
        for (size_t i = 0; i < kReadLen; ++i) {
          CHILD_CHECK(m[kReadAt + i] == Pattern(i, 5), 21);
        }
        CHILD_CHECK(m[kReadAt + kReadLen] == 0, 22);
        WriteAll(up, &step, 1);

        // B's SEND lands in the malloc'd receive buffer.
        wc = PollCompletion(o);
        CHILD_CHECK(wc.wr_id == 9 && wc.status == ROCEMU_WC_SUCCESS &&
                        wc.opcode == ROCEMU_WC_RECV && wc.byte_len == kSendLen,
                    kRecvWc);
        for (size_t i = 0; i < kSendLen; ++i) {
          CHILD_CHECK(m[kRecvAt + i] == Pattern(i, 7), kRecvBytes);
        }
        ReadAll(down, &step, 1);  // B WROTE into the region by its R_Key
        for (size_t i = 0; i < kInLen; ++i) {
          CHILD_CHECK(m[kInAt + i] == Pattern(i, 9), 23);
        }
        CHILD_CHECK(m[kInAt + kInLen] == 0, 24);

        // A region unmapped behind the daemon's back: the WRITE from it
        // completes in error, the QP goes to ERR, the daemon carries on.
        void* gone = mmap(nullptr, 8192, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHILD_CHECK(gone != MAP_FAILED, 25);
        rocemu_mr* gmr =
            rocemu_reg_mr(o.pd, gone, 8192, ROCEMU_ACCESS_LOCAL_WRITE);
        CHILD_CHECK(gmr != nullptr, 26);
        std::memset(gone, 0x5A, 8192);
        CHILD_CHECK(munmap(gone, 8192) == 0, 27);
        rocemu_sge gs{reinterpret_cast<uint64_t>(gone), 4096, gmr->lkey};
        wr.wr_id = 3;
        wr.sg_list = &gs;
        wr.opcode = ROCEMU_WR_RDMA_WRITE;
        wr.wr.rdma.remote_addr = peer.addr + kPeerUntouched;
        wc = PostAndWait(o, &wr);
        CHILD_CHECK(
            wc.wr_id == 3 && wc.status == (moved ? ROCEMU_WC_SUCCESS
                                                 : ROCEMU_WC_LOC_PROT_ERR),
            28);
        rocemu_qp_attr q{};
        CHILD_CHECK(rocemu_query_qp(o.qp, &q, ROCEMU_QP_STATE) == 0 &&
                        q.qp_state == (moved ? ROCEMU_QPS_RTS : ROCEMU_QPS_ERR),
                    29);
        CHILD_CHECK(rocemu_dereg_mr(gmr) == 0, 30);
        CHILD_CHECK(rocemu_dereg_mr(mr) == 0, 31);
        std::free(m);
      },
      &from_child, &to_child);
  ProcessInfo info;
  ASSERT_TRUE(PumpRead(from_child, &info, sizeof(info)))
      << "client exited with " << PumpUntilExit(pid);
  std::string text;
  server_->AppendStateJson(&text);
  const nlohmann::json json =
      nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(json.is_object()) << text;
  // Some MR of the client covers the region, served in place ("process")
  // or from shared memory ("shm").
  bool listed = false;
  for (const nlohmann::json& c : json["clients"]) {
    for (const nlohmann::json& m : c["mrs"]) {
      listed |= m["iova"] == info.addr && m["length"] == kRegion &&
                m["access"] == 7 && m["kind"] == (moved ? "shm" : "process");
    }
  }
  EXPECT_TRUE(listed) << text;
  ConnectPeer(eb, info.qpn);
  ASSERT_EQ(write(to_child, "g", 1), 1);
  char step;
  ASSERT_TRUE(PumpRead(from_child, &step, 1))
      << "client exited with " << PumpUntilExit(pid);
  for (size_t i = 0; i < kWriteLen; ++i) {
    ASSERT_EQ(eb.buf[i], Pattern(i, 3)) << "byte " << i;
  }
  EXPECT_EQ(eb.buf[kWriteLen], 0);

  for (size_t i = 0; i < kSendLen; ++i)
    eb.buf[kPeerSendSrc + i] = Pattern(i, 7);
  ASSERT_TRUE(PeerSend(eb, 50, kPeerSendSrc, kSendLen).ok());
  for (size_t i = 0; i < kInLen; ++i) eb.buf[kPeerInSrc + i] = Pattern(i, 9);
  nic::SendWr in;
  in.wr_id = 51;
  in.opcode = nic::WrOpcode::kRdmaWrite;
  in.send_flags = nic::send_flags::kSignaled;
  in.rdma.remote_addr = info.addr + kInAt;
  in.rdma.rkey = info.rkey;
  in.sg_list.PushBack(nic::testing::SgeOf(eb, kPeerInSrc, kInLen));
  ASSERT_TRUE(net_.b().PostSend(eb.qpn, in).ok());
  std::vector<nic::WorkCompletion> wcs;
  const time_t give_up = time(nullptr) + 30;
  while (wcs.size() < 2 && time(nullptr) < give_up) {
    Pump();
    for (const nic::WorkCompletion& w : nic::testing::Poll(net_.b(), eb.cq)) {
      wcs.push_back(w);
    }
  }
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].wr_id, 50u);
  EXPECT_EQ(wcs[0].status, nic::WcStatus::kSuccess);
  EXPECT_EQ(wcs[1].wr_id, 51u);
  EXPECT_EQ(wcs[1].status, nic::WcStatus::kSuccess);
  ASSERT_EQ(write(to_child, "i", 1), 1);
  EXPECT_EQ(PumpUntilExit(pid), 0);
  // A process region: nothing of the faulting region reached B. A moved
  // one: its pages outlived the program's mapping, as pinned pages do.
  for (size_t i = 0; i < 4096; ++i) {
    ASSERT_EQ(eb.buf[kPeerUntouched + i], moved ? 0x5A : 0) << i;
  }
  if (moved) {
    EXPECT_EQ(net_.a().QueryCounters().mr_access_faults, 0u);
  } else {
    EXPECT_GE(net_.a().QueryCounters().mr_access_faults, 1u);
  }
  EXPECT_EQ(server_->num_clients(), 0u);
  EXPECT_EQ(net_.a().mr_table().size(), 0u);
  close(from_child);
  close(to_child);
}

// A client cannot register another process's memory: the pid is the
// socket peer's, so a range that is not mapped in the client is refused
// even if it is mapped in the daemon.
TEST_F(VerbsSessionTest, ProcessRegionIsTheClientsOwnMemory) {
  StartServer();
  // Mapped here, in the daemon's process, and not in the child (unmapped
  // there after the fork).
  void* daemon_only = mmap(nullptr, 4096, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(daemon_only, MAP_FAILED);
  std::memset(daemon_only, 0x77, 4096);
  const std::string path = path_;
  int from_child, to_child;
  const pid_t pid = Fork(
      [&](int, int) {
        // Unmapped after the library's own mappings, which could
        // otherwise land on the same address.
        ClientObjs o = OpenClient(path, 4096);
        CHILD_CHECK(munmap(daemon_only, 4096) == 0, 20);
        rocemu_mr* mr = rocemu_reg_mr(o.pd, daemon_only, 4096, 0);
        CHILD_CHECK(mr == nullptr, 21);
        CHILD_CHECK(errno == EINVAL, 22);
      },
      &from_child, &to_child);
  EXPECT_EQ(PumpUntilExit(pid), 0);
  munmap(daemon_only, 4096);
  close(from_child);
  close(to_child);
}

}  // namespace
}  // namespace rocemu::verbs::testing
