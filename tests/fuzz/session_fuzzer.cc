// The verbs session server as an attached application can drive it: any
// sequence of requests (every message type, bodies of any bytes, with or
// without descriptors) from one client over the real Unix socket, served
// by an in-process SessionServer in front of an RNIC whose frames go
// nowhere. Each input is one client that connects, sends its records and
// goes; the server and the RNIC live on across inputs, as a daemon does,
// so what one client leaves behind meets the next one.
//
// Invariants checked on every input: the server answers every well-framed
// request with exactly one reply, of its type and sequence number; the client's
// departure releases everything it held (no client, no QP of it left).
//
// Input: records of [type u8][flags u8][len u16 le][len bytes of body].
// type is taken modulo kMaxMsgType + 1 (0 and out-of-range types are left
// to the decoder through flag bit 2, which sends the body as the whole
// message, header included). Flag bit 0 attaches an eventfd, bit 1 a 64 KiB
// memfd. Body words 0xFEED00NN name the client's own objects (below).
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "nic/rnic.h"
#include "tests/fuzz/scratch_socket.h"
#include "tests/verbs/raw_verbs_client.h"
#include "verbs/server/session_server.h"
#include "verbs/wire/wire_protocol.h"

namespace {

using rocemu::verbs::SessionServer;
namespace wire = rocemu::verbs::wire;

struct World {
  std::unique_ptr<rocemu::nic::Rnic> rnic;
  std::unique_ptr<SessionServer> server;
  std::string path;
  rocemu::nic::TimeNs now = 1'000'000'000;
};

World& W() {
  static World* w = [] {
    auto* w = new World;
    rocemu::nic::RnicConfig cfg;
    cfg.mac = {0x02, 0, 0, 0, 0, 0x01};
    cfg.gid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1};
    w->rnic = std::make_unique<rocemu::nic::Rnic>(cfg);
    rocemu::verbs::SessionServerOptions o;
    w->path = rocemu::fuzz::ScratchSocketPath("rocemu-session-fuzz");
    o.socket_path = w->path;
    o.device_name = "rocemu_fuzz";
    // Neighbours: ourselves and one other known, everything else
    // "resolving" (EAGAIN).
    o.resolve_dmac = [](const rocemu::nic::Gid& g)
        -> std::optional<rocemu::protocol::MacAddr> {
      if (g[15] == 1) return rocemu::protocol::MacAddr{2, 0, 0, 0, 0, 1};
      if (g[15] == 2) return rocemu::protocol::MacAddr{2, 0, 0, 0, 0, 2};
      return std::nullopt;
    };
    auto s = SessionServer::Create(*w->rnic, o);
    if (!s.ok()) {
      std::fprintf(stderr, "session server: %s\n",
                   s.status().ToString().c_str());
      std::abort();
    }
    w->server = std::move(*s);
    std::atexit([] {
      // ROCEMU_FUZZ_STATE=1: what the inputs reached (the server's
      // counters and the CM's), to see a corpus is not stuck at Hello.
      if (std::getenv("ROCEMU_FUZZ_STATE") != nullptr) {
        std::string out;
        W().server->AppendStateJson(&out);
        std::fprintf(stderr, "%s\n", out.c_str());
        const rocemu::nic::DeviceCounters c = W().rnic->QueryCounters();
        for (const rocemu::nic::CounterField& f : rocemu::nic::kCounterFields) {
          if (c.*f.field != 0) {
            std::fprintf(stderr, "%s=%llu ", f.name,
                         static_cast<unsigned long long>(c.*f.field));
          }
        }
        std::fprintf(stderr, "\n");
      }
      unlink(W().path.c_str());
    });
    return w;
  }();
  return *w;
}

// One pass of the daemon: control, data, and the RNIC's frames, looped
// back into it (a connection to our own address reaches our own CM and
// QPs; frames for anyone else are dropped on receipt).
void Step(World& w) {
  w.server->Poll();
  static std::vector<uint8_t> bufs(4 * 9216);
  rocemu::nic::TxFrame tx[4];
  w.now += 1'000'000;  // 1 ms: CM and transport timers fire over a run
  for (int guard = 0; guard < 64; ++guard) {
    for (int i = 0; i < 4; ++i) {
      tx[i].data = bufs.data() + i * 9216;
      tx[i].capacity = 9216;
    }
    const size_t n = w.rnic->Transmit(0, tx, w.now);
    if (n == 0) break;
    rocemu::nic::RxFrame rx[4];
    for (size_t i = 0; i < n; ++i) rx[i] = {tx[i].data, tx[i].len};
    w.rnic->Receive(0, {rx, n}, w.now);
  }
}

// Objects are named by handles the server hands out (PD, CQ, QP numbers,
// CM ids), which change from run to run: a body word 0xFEED00NN stands for
// the NN-th handle this client was given (the first word of each successful
// reply), so that inputs can name their own objects.
std::vector<uint32_t> g_handles;

void SubstituteHandles(uint8_t* body, size_t len) {
  if (g_handles.empty()) return;
  for (size_t i = 0; i + 4 <= len; i += 4) {
    uint32_t v;
    std::memcpy(&v, body + i, 4);
    if ((v >> 8) != 0xFEED00) continue;
    v = g_handles[(v & 0xFF) % g_handles.size()];
    std::memcpy(body + i, &v, 4);
  }
}

// What a framed request's reply must carry: its type with the reply flag,
// its sequence number.
struct Expect {
  uint16_t type;
  uint32_t seq;
};

// Reads whatever replies wait; closes descriptors they carry. Returns the
// number of replies read; each must answer `want` when it is given.
int DrainReplies(int fd, const Expect* want) {
  int n = 0;
  for (;;) {
    uint8_t buf[wire::kMaxMessage + 64];
    int nfds;
    const ssize_t r = rocemu::verbs::testing::RecvWithFds(fd, buf, sizeof(buf),
                                                          nullptr, &nfds);
    if (r <= 0) return n;
    if (static_cast<size_t>(r) < sizeof(wire::MsgHeader)) continue;
    ++n;
    if (want != nullptr) {
      wire::MsgHeader h;
      std::memcpy(&h, buf, sizeof(h));
      if (h.seq != want->seq || h.type != (want->type | wire::kReplyFlag)) {
        std::fprintf(stderr,
                     "request type %u seq %u answered by type 0x%x seq %u\n",
                     want->type, want->seq, h.type, h.seq);
        std::abort();
      }
    }
    {
      const size_t at = sizeof(wire::MsgHeader) + sizeof(wire::ReplyStatus);
      wire::ReplyStatus st;
      uint32_t first = 0;
      if (static_cast<size_t>(r) >= at + 4) {
        std::memcpy(&st, buf + sizeof(wire::MsgHeader), sizeof(st));
        std::memcpy(&first, buf + at, 4);
        if (st.error == 0 && first != 0) g_handles.push_back(first);
      }
    }
    // ROCEMU_FUZZ_TRACE=1: each reply's type and status (corpus work).
    static const bool trace = std::getenv("ROCEMU_FUZZ_TRACE") != nullptr;
    if (trace && static_cast<size_t>(r) >=
                     sizeof(wire::MsgHeader) + sizeof(wire::ReplyStatus)) {
      wire::MsgHeader h;
      wire::ReplyStatus st;
      std::memcpy(&h, buf, sizeof(h));
      std::memcpy(&st, buf + sizeof(h), sizeof(st));
      const size_t at = sizeof(h) + sizeof(st);
      uint32_t first = 0;  // handle-like replies: the new object's number
      if (static_cast<size_t>(r) >= at + 4) std::memcpy(&first, buf + at, 4);
      std::fprintf(stderr, "reply %s seq %u: error %d, first word %u\n",
                   wire::MsgTypeName(
                       static_cast<wire::MsgType>(h.type & ~wire::kReplyFlag)),
                   h.seq, st.error, first);
    }
  }
}

bool SendRecord(int fd, const uint8_t* msg, size_t len, uint8_t flags) {
  int fds[2];
  int nfds = 0;
  if (flags & 1) fds[nfds++] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (flags & 2) {
    const int m = memfd_create("fuzz", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (m >= 0 && ftruncate(m, 65536) == 0) {
      fds[nfds++] = m;
    } else if (m >= 0) {
      close(m);
    }
  }
  iovec iov{const_cast<uint8_t*>(msg), len};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int) * 2)];
  if (nfds > 0) {
    mh.msg_control = ctl;
    mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
    cmsghdr* c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
    std::memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
  }
  const bool ok = sendmsg(fd, &mh, MSG_NOSIGNAL) == static_cast<ssize_t>(len);
  for (int i = 0; i < nfds; ++i) close(fds[i]);
  return ok;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  World& w = W();
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) std::abort();
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, w.path.data(), w.path.size());
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    std::abort();
  }
  Step(w);
  g_handles.clear();
  uint32_t seq = 0;
  size_t off = 0;
  while (off + 4 <= size) {
    const uint8_t type = data[off];
    const uint8_t flags = data[off + 1];
    size_t len = data[off + 2] | (size_t{data[off + 3]} << 8);
    off += 4;
    len = std::min(len, size - off);
    uint8_t msg[wire::kMaxMessage];
    size_t mlen;
    bool framed = false;
    Expect want{};
    if (flags & 4) {
      // Raw bytes: the decoder's framing checks.
      mlen = std::min(len, sizeof(msg));
      std::memcpy(msg, data + off, mlen);
    } else {
      const auto t = static_cast<wire::MsgType>(1 + type % wire::kMaxMsgType);
      const size_t body = std::min(len, sizeof(msg) - sizeof(wire::MsgHeader));
      uint8_t b[wire::kMaxMessage];
      std::memcpy(b, data + off, body);
      SubstituteHandles(b, body);
      mlen = wire::EncodeRequest(t, ++seq, b, body, {msg, sizeof(msg)});
      framed = mlen != 0;
      want = {static_cast<uint16_t>(t), seq};
    }
    off += len;
    if (mlen == 0) continue;
    if (!SendRecord(fd, msg, mlen, flags)) break;
    // The server answers each request at once (a neighbour still
    // resolving is an EAGAIN reply, not a wait).
    int replies = 0;
    for (int i = 0; i < 4 && replies == 0; ++i) {
      Step(w);
      replies += DrainReplies(fd, framed ? &want : nullptr);
    }
    if (framed && replies != 1) {
      // A client the server dropped (its refusal, a ring it broke) gets no
      // more replies: that ends the input, anything else is a lost reply.
      char probe;
      const ssize_t r = recv(fd, &probe, 1, MSG_DONTWAIT | MSG_PEEK);
      if (r != 0) {
        std::fprintf(stderr, "request %u: %d replies\n", seq, replies);
        std::abort();
      }
      break;
    }
  }
  close(fd);
  // The client's departure releases all it held.
  for (int i = 0; i < 16 && w.server->num_clients() != 0; ++i) Step(w);
  if (w.server->num_clients() != 0) {
    std::fprintf(stderr, "a departed client is still held\n");
    std::abort();
  }
  bool qp_left = false;
  w.rnic->ForEachQp([&](const rocemu::nic::Qp& qp) {
    if (w.server->QpOwner(qp.qpn()).has_value()) qp_left = true;
  });
  if (qp_left) {
    std::fprintf(stderr, "a departed client's QP is still owned\n");
    std::abort();
  }
  return 0;
}
