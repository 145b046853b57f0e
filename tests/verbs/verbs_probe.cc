// verbs_probe: a small client of the rocemu verbs library that the net
// suite's scripts drive against real rocemud daemons
// (tests/emulator/net_verbs_robust_test.py).
//
// Peers meet through files in --dir: each side writes <name>.info (its QPN,
// PSN, GID, MAC, keys, addresses) and waits for the peer's, then writes
// <name>.rts once its QP is in RTS and waits for the peer's before sending
// (a SEND reaching a QP still in RTR's predecessor states would be dropped
// and burn retries). Results are JSON lines on stdout; the exit status is 0
// only when everything the subcommand checks held.
//
//   open     open the device and report the client id or the errno.
//   stream   RC SENDs both ways, a window in flight, every received message
//            checked byte for byte; stops cleanly when <dir>/stop exists,
//            or (--expect_error) ends at the first error completion.
//   victim   (U1) an MR full of a pattern and an RC QP pair across the two
//            daemons; when <dir>/<name>.stop exists, checks that its memory,
//            QP and MR are intact and still work.
//   attacker (U2) uses the victim's L_Key, R_Key, QPN and MR keys in every
//            way a client can, each next to a positive control.
#include "tests/verbs/verbs_probe.h"

#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "verbs/rocemu_verbs.h"
#include "verbs/wire/wire_protocol.h"

ABSL_FLAG(std::string, socket, "", "verbs socket of the first daemon");
ABSL_FLAG(std::string, socket2, "", "verbs socket of the second daemon");
ABSL_FLAG(std::string, dir, "", "directory where peers exchange their info");
ABSL_FLAG(std::string, name, "", "this side's name");
ABSL_FLAG(std::string, peer, "", "the peer's name (stream) or victim's");
ABSL_FLAG(uint32_t, seed, 1, "seed of this side's data pattern");
ABSL_FLAG(uint32_t, size, 4000, "message size in bytes (stream)");
ABSL_FLAG(uint32_t, window, 16, "SENDs in flight (stream)");
ABSL_FLAG(int, mtu, ROCEMU_MTU_1024, "path MTU code (IBV_MTU_*)");
ABSL_FLAG(int, timeout, 12, "local ACK timeout exponent (4.096 us * 2^t)");
ABSL_FLAG(int, retry_cnt, 3, "transport retries before RETRY_EXC_ERR");
ABSL_FLAG(bool, expect_error, false,
          "stream: end with success at the first error completion");
ABSL_FLAG(bool, zero_dmac, false,
          "leave the address vector's MAC zero: the daemon resolves it");
ABSL_FLAG(int, seconds, 60, "give up (and fail) after this long");

namespace rocemu::verbs::probe {
namespace {

// ---------------------------------------------------------------- open ----

int CmdOpen() {
  const std::string socket = absl::GetFlag(FLAGS_socket);
  rocemu_context* ctx = rocemu_open_device(socket.c_str());
  if (ctx == nullptr) {
    const int e = errno;
    Emit(absl::StrFormat(
        R"({"event":"open","ok":false,"uid":%d,"errno":%d,"error":"%s"})",
        getuid(), e, std::strerror(e)));
    return kRefused;
  }
  Emit(absl::StrFormat(R"({"event":"open","ok":true,"uid":%d,"client_id":%d})",
                       getuid(), rocemu_client_id(ctx)));
  rocemu_close_device(ctx);
  return kOk;
}

// -------------------------------------------------------------- stream ----

// Both sides send a window of SENDs and keep `2 * window + 1` receives
// posted, reposting each as it completes; every message carries its
// sequence number and the sender's pattern, and must arrive in order and
// byte-exact. On <dir>/stop each side sends an END message carrying its
// total and finishes once its own sends completed and the peer's END came.
int CmdStream() {
  const std::string dir = absl::GetFlag(FLAGS_dir);
  const std::string name = absl::GetFlag(FLAGS_name);
  const std::string peer = absl::GetFlag(FLAGS_peer);
  const uint32_t seed = absl::GetFlag(FLAGS_seed);
  const size_t size = absl::GetFlag(FLAGS_size);
  const uint32_t window = absl::GetFlag(FLAGS_window);
  const uint32_t nrecv = 2 * window + 1;
  const bool expect_error = absl::GetFlag(FLAGS_expect_error);
  const double deadline = Now() + absl::GetFlag(FLAGS_seconds);
  if (dir.empty() || name.empty() || peer.empty() || size < kHeader ||
      window == 0) {
    Die("stream needs --dir, --name, --peer, --size >= 16, --window > 0",
        EINVAL);
  }

  // Receive slots first, then send slots.
  Side s = OpenSide(absl::GetFlag(FLAGS_socket), (nrecv + window) * size,
                    static_cast<int>(2 * (nrecv + window)));
  rocemu_qp* qp = CreateRcQp(s, window + 1, nrecv);
  const Endpoint local = EndpointOf(s, qp);
  ToInit(qp);
  for (uint32_t i = 0; i < nrecv; ++i) {
    if (int e = PostRecv(qp, i, s.addr(i * size), size, s.mr->lkey); e != 0) {
      Die("post_recv", e);
    }
  }
  Info info;
  PutEndpoint(local, "", &info);
  info["seed"] = absl::StrCat(seed);
  WriteInfo(dir + "/" + name + ".info", info);
  Emit(absl::StrFormat(
      R"({"event":"ready","name":"%s","pid":%d,"client_id":%d,"qpn":%d,"lkey":%d})",
      name, getpid(), rocemu_client_id(s.ctx), local.qpn, s.mr->lkey));

  const Info pinfo = WaitInfo(dir + "/" + peer + ".info", deadline);
  const Endpoint remote = GetEndpoint(pinfo, "");
  const uint32_t peer_seed = static_cast<uint32_t>(U64(pinfo, "seed"));
  ToRts(qp, local, remote);
  WriteInfo(dir + "/" + name + ".rts", {{"qpn", absl::StrCat(local.qpn)}});
  WaitFile(dir + "/" + peer + ".rts", deadline);
  Emit(absl::StrFormat(R"({"event":"connected","name":"%s","peer_qpn":%d})",
                       name, remote.qpn));

  uint64_t posted = 0, sent = 0, received = 0;
  uint32_t in_flight = 0;
  bool stopping = false, end_posted = false, end_done = false;
  bool peer_ended = false;
  uint64_t peer_total = 0;
  double next_report = Now(), next_stop_check = Now();
  const std::string stop_path = dir + "/stop";
  auto report = [&](const char* event) {
    Emit(absl::StrFormat(
        R"({"event":"%s","name":"%s","t":%.6f,"sent":%d,"recv":%d,"in_flight":%d})",
        event, name, Now(), sent, received, in_flight));
  };

  rocemu_wc wcs[16];
  for (;;) {
    const double now = Now();
    if (now > deadline) {
      report("timeout");
      return kCheckFailed;
    }
    if (now >= next_report) {
      report("progress");
      next_report = now + 0.02;
    }
    if (!stopping && now >= next_stop_check) {
      stopping = Exists(stop_path);
      next_stop_check = now + 0.02;
    }
    // Keep the window full; the slot of a send is free once it completed
    // (completions of one QP arrive in order).
    while (!end_posted && in_flight < window) {
      const uint32_t slot = static_cast<uint32_t>(posted % window);
      uint8_t* p = s.base() + (nrecv + slot) * size;
      const uint32_t flags = stopping ? kFlagEnd : 0;
      // An END carries the number of data messages before it.
      const uint64_t seq = posted;
      if (!stopping) FillPattern(p + kHeader, size - kHeader, seed, seq);
      std::memcpy(p, &kMsgMagic, 4);
      std::memcpy(p + 4, &flags, 4);
      std::memcpy(p + 8, &seq, 8);
      const int e = PostOne(qp, ROCEMU_WR_SEND, posted, s.addr(p - s.base()),
                            static_cast<uint32_t>(stopping ? kHeader : size),
                            s.mr->lkey, 0, 0);
      if (e != 0) Die("post_send", e);
      ++posted;
      ++in_flight;
      if (stopping) end_posted = true;
    }
    const int n = rocemu_poll_cq(s.cq, 16, wcs);
    if (n < 0) Die("poll_cq: ring corrupted", EPROTO);
    for (int i = 0; i < n; ++i) {
      const rocemu_wc& wc = wcs[i];
      if (wc.status != ROCEMU_WC_SUCCESS) {
        Emit(absl::StrFormat(
            R"({"event":"error_wc","name":"%s","t":%.6f,"sent":%d,"recv":%d,"wc":%s})",
            name, Now(), sent, received, WcJson(wc)));
        if (!expect_error) return kCheckFailed;
        // The rest of the QP's work flushes: show what followed.
        const double until = Now() + 0.3;
        rocemu_wc more;
        while (PollOne(s.cq, &more, until)) {
          Emit(absl::StrFormat(R"({"event":"later_wc","name":"%s","wc":%s})",
                               name, WcJson(more)));
        }
        return kOk;
      }
      if (wc.opcode == ROCEMU_WC_SEND) {
        --in_flight;
        if (end_posted && in_flight == 0) {
          end_done = true;
        } else {
          ++sent;
        }
        continue;
      }
      // A receive: in order, byte-exact.
      const uint8_t* p = s.base() + wc.wr_id * size;
      uint32_t magic, flags;
      uint64_t seq;
      std::memcpy(&magic, p, 4);
      std::memcpy(&flags, p + 4, 4);
      std::memcpy(&seq, p + 8, 8);
      const bool end = magic == kMsgMagic && (flags & kFlagEnd) != 0;
      const bool good =
          wc.opcode == ROCEMU_WC_RECV && magic == kMsgMagic && !peer_ended &&
          seq == received &&
          (end ? wc.byte_len == kHeader
               : wc.byte_len == size &&
                     IsPattern(p + kHeader, size - kHeader, peer_seed, seq));
      if (!good) {
        Emit(absl::StrFormat(
            R"({"event":"corrupt","name":"%s","expected_seq":%d,"seq":%d,"flags":%d,"wc":%s})",
            name, received, seq, flags, WcJson(wc)));
        return kCheckFailed;
      }
      if (end) {
        peer_ended = true;
        peer_total = seq;
      } else {
        ++received;
      }
      if (int e =
              PostRecv(qp, wc.wr_id, s.addr(wc.wr_id * size), size, s.mr->lkey);
          e != 0) {
        Die("post_recv", e);
      }
    }
    if (end_done && peer_ended) break;
    if (n == 0) usleep(100);
  }
  report("done");
  if (peer_total != received) {
    Emit(absl::StrFormat(
        R"({"event":"count_mismatch","name":"%s","peer_sent":%d,"recv":%d})",
        name, peer_total, received));
    return kCheckFailed;
  }
  if (expect_error) {
    Emit(R"({"event":"no_error_wc"})");
    return kCheckFailed;
  }
  return kOk;
}

// -------------------------------------------------------------- victim ----

constexpr size_t kVictimLen = 64 * 1024;

// U1: an MR on daemon 1 full of its pattern, QP v1 there and QP v2 on
// daemon 2 connected to each other; afterwards READs its MR back over that
// pair, which needs its MR, its QP and its memory all to be intact.
int CmdVictim() {
  const std::string dir = absl::GetFlag(FLAGS_dir);
  const std::string name = absl::GetFlag(FLAGS_name);
  const uint32_t seed = absl::GetFlag(FLAGS_seed);
  const double deadline = Now() + absl::GetFlag(FLAGS_seconds);
  Side d1 = OpenSide(absl::GetFlag(FLAGS_socket), kVictimLen, 16);
  Side d2 = OpenSide(absl::GetFlag(FLAGS_socket2), kVictimLen, 16);
  FillPattern(d1.base(), kVictimLen, seed, 0);
  rocemu_qp* q1 = CreateRcQp(d1, 4, 4);
  rocemu_qp* q2 = CreateRcQp(d2, 4, 4);
  const Endpoint e1 = EndpointOf(d1, q1), e2 = EndpointOf(d2, q2);
  Connect(q1, e1, e2);
  Connect(q2, e2, e1);
  Info info;
  PutEndpoint(e1, "", &info);
  info["lkey"] = absl::StrCat(d1.mr->lkey);
  info["rkey"] = absl::StrCat(d1.mr->rkey);
  info["addr"] = absl::StrCat(d1.addr(0));
  info["len"] = absl::StrCat(kVictimLen);
  WriteInfo(dir + "/" + name + ".info", info);
  Emit(absl::StrFormat(
      R"({"event":"ready","name":"%s","client_id":%d,"client_id2":%d,"qpn":%d,"lkey":%d,"rkey":%d})",
      name, rocemu_client_id(d1.ctx), rocemu_client_id(d2.ctx), e1.qpn,
      d1.mr->lkey, d1.mr->rkey));

  WaitFile(dir + "/" + name + ".stop", deadline);
  bool ok = true;
  const bool intact = IsPattern(d1.base(), kVictimLen, seed, 0);
  ok &= intact;
  rocemu_qp_attr qa{};
  const int qerr = rocemu_query_qp(q1, &qa, ROCEMU_QP_STATE);
  ok &= qerr == 0 && qa.qp_state == ROCEMU_QPS_RTS;
  // The whole region read back from daemon 2 through the victim's own
  // R_Key.
  bool read_ok = false;
  rocemu_wc wc{};
  if (PostOne(q2, ROCEMU_WR_RDMA_READ, 77, d2.addr(0), kVictimLen, d2.mr->lkey,
              d1.addr(0), d1.mr->rkey) == 0 &&
      PollOne(d2.cq, &wc, Now() + 10)) {
    read_ok = wc.status == ROCEMU_WC_SUCCESS &&
              IsPattern(d2.base(), kVictimLen, seed, 0);
  }
  ok &= read_ok;
  Emit(absl::StrFormat(
      R"({"event":"victim_final","name":"%s","memory_intact":%s,"query_qp_errno":%d,"qp_state":%d,"read_back_ok":%s,"read_wc":%s})",
      name, intact ? "true" : "false", qerr, qa.qp_state,
      read_ok ? "true" : "false", WcJson(wc)));
  return ok ? kOk : kCheckFailed;
}

int Main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "verbs_probe open|stream|victim|attacker [flags]: a verbs client for "
      "the net tests (see the file comment)");
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() != 2) {
    std::fprintf(stderr, "usage: verbs_probe open|stream|victim|attacker\n");
    return kSetupFailed;
  }
  const std::string cmd = args[1];
  if (cmd == "open") return CmdOpen();
  if (cmd == "stream") return CmdStream();
  if (cmd == "victim") return CmdVictim();
  if (cmd == "attacker") return CmdAttacker();
  std::fprintf(stderr, "unknown subcommand %s\n", cmd.c_str());
  return kSetupFailed;
}

}  // namespace
}  // namespace rocemu::verbs::probe

int main(int argc, char** argv) {
  return rocemu::verbs::probe::Main(argc, argv);
}
