// The pieces of rocemu-pingpong that must match rdma-core's
// ibv_rc_pingpong / ibv_ud_pingpong: the 52-byte address record, the TCP
// exchange (over loopback, against a hand-written peer speaking the
// rdma-core side of it), the message flow, the command line and the
// payload checks.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "verbs/tools/pingpong_dest.h"
#include "verbs/tools/pingpong_exchange.h"
#include "verbs/tools/pingpong_flow.h"
#include "verbs/tools/pingpong_options.h"
#include "verbs/tools/pingpong_payload.h"

namespace rocemu::pingpong {
namespace {

Gid MappedGid(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  Gid g{};
  g[10] = g[11] = 0xFF;
  g[12] = a;
  g[13] = b;
  g[14] = c;
  g[15] = d;
  return g;
}

// --- the address record ---------------------------------------------------

TEST(DestTest, FormatsAsTheRdmaCoreTools) {
  Dest d{0, 0x11, 0xABCDEF, MappedGid(10, 99, 0, 254)};
  const DestMessage m = FormatDest(d);
  // The record of the peer README's example GID, 51 characters and a NUL.
  const char want[] = "0000:000011:abcdef:00000000000000000000ffff0a6300fe";
  static_assert(sizeof(want) == kDestMessageSize);
  EXPECT_EQ(0, std::memcmp(m.data(), want, sizeof(want)));
}

TEST(DestTest, MasksQpnAndPsnTo24Bits) {
  Dest d{0x1234, 0x7F000011, 0xFF000001, {}};
  const DestMessage m = FormatDest(d);
  EXPECT_EQ(std::string(m.data()),
            "1234:000011:000001:00000000000000000000000000000000");
}

TEST(DestTest, ParsesWhatItFormatsAndUpperCaseHex) {
  Dest d{0x00AB, 0x123456, 0xFEDCBA, MappedGid(192, 168, 1, 7)};
  auto back = ParseDest(FormatDest(d));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, d);
  const char upper[] = "00AB:123456:FEDCBA:00000000000000000000FFFFC0A80107";
  auto u = ParseDest(std::span<const char>(upper, sizeof(upper)));
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(*u, d);
}

TEST(DestTest, RejectsMalformedRecords) {
  const std::string good =
      std::string("0000:000011:abcdef:00000000000000000000ffff0a6300fe") + '\0';
  ASSERT_TRUE(ParseDest(std::span<const char>(good)).ok());
  auto bad = [&](size_t pos, char c) {
    std::string s = good;
    s[pos] = c;
    return ParseDest(std::span<const char>(s)).status();
  };
  EXPECT_FALSE(bad(4, '-').ok());
  EXPECT_FALSE(bad(11, '.').ok());
  EXPECT_FALSE(bad(18, ' ').ok());
  EXPECT_FALSE(bad(51, 'x').ok());  // no NUL
  EXPECT_FALSE(bad(2, 'g').ok());   // LID
  EXPECT_FALSE(bad(7, 'z').ok());   // QPN
  EXPECT_FALSE(bad(13, ':').ok());  // PSN
  EXPECT_FALSE(bad(40, 'q').ok());  // GID
  EXPECT_NE(bad(40, 'q').message().find("GID"), std::string::npos);
  EXPECT_FALSE(
      ParseDest(std::span<const char>(good.data(), good.size() - 1)).ok());
}

TEST(DestTest, GidHelpers) {
  const Gid v4 = MappedGid(10, 99, 0, 1);
  EXPECT_EQ(GidToText(v4), "::ffff:10.99.0.1");
  EXPECT_TRUE(GidHasInterfaceId(v4));
  EXPECT_FALSE(GidHasInterfaceId(Gid{}));
  Gid ll{};
  ll[0] = 0xFE;
  ll[1] = 0x80;
  EXPECT_FALSE(GidHasInterfaceId(ll));  // fe80:: with no interface id
  ll[15] = 1;
  EXPECT_TRUE(GidHasInterfaceId(ll));
  EXPECT_EQ(GidToText(ll), "fe80::1");
  std::array<uint8_t, 4> ip{};
  ASSERT_TRUE(GidIpv4(v4, &ip));
  EXPECT_EQ(ip, (std::array<uint8_t, 4>{10, 99, 0, 1}));
  EXPECT_FALSE(GidIpv4(ll, &ip));
}

// --- the TCP exchange -------------------------------------------------------

int ConnectLoopback(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

size_t ReadAll(int fd, char* buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    const ssize_t n = read(fd, buf + got, len - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  return got;
}

TEST(ExchangeTest, ClientAndServerSwapAddressesAndServerConnectsFirst) {
  auto listener = ExchangeListener::Listen(0);
  ASSERT_TRUE(listener.ok()) << listener.status();
  const uint16_t port = listener->port();
  ASSERT_NE(port, 0);
  const Dest server_dest{0, 0x22, 0x654321, MappedGid(10, 0, 0, 2)};
  const Dest client_dest{0, 0x11, 0x123456, MappedGid(10, 0, 0, 1)};
  Dest seen_by_connect{};
  absl::StatusOr<Dest> got_by_server;
  std::thread server([&] {
    got_by_server = listener->Serve(
        server_dest,
        [&](const Dest& d) {
          seen_by_connect = d;
          return absl::OkStatus();
        },
        5000);
  });
  auto got_by_client = ClientExchange("127.0.0.1", port, client_dest, 5000);
  server.join();
  ASSERT_TRUE(got_by_client.ok()) << got_by_client.status();
  ASSERT_TRUE(got_by_server.ok()) << got_by_server.status();
  EXPECT_EQ(*got_by_client, server_dest);
  EXPECT_EQ(*got_by_server, client_dest);
  EXPECT_EQ(seen_by_connect, client_dest);
}

// The server as the rdma-core client drives it: 52 bytes out, 52 bytes in,
// then exactly "done\0"; the server closes after that.
TEST(ExchangeTest, ServerFacesAnRdmaCoreStyleClient) {
  auto listener = ExchangeListener::Listen(0);
  ASSERT_TRUE(listener.ok()) << listener.status();
  const uint16_t port = listener->port();
  const Dest mine{0, 0x33, 0x000777, MappedGid(10, 99, 0, 10)};
  absl::StatusOr<Dest> got;
  std::thread server([&] {
    got = listener->Serve(
        mine, [](const Dest&) { return absl::OkStatus(); }, 5000);
  });
  const int fd = ConnectLoopback(port);
  ASSERT_GE(fd, 0);
  const char hello[] = "0000:0000aa:00bbbb:00000000000000000000ffff0a630001";
  ASSERT_EQ(write(fd, hello, sizeof(hello)), ssize_t{sizeof(hello)});
  char reply[kDestMessageSize];
  ASSERT_EQ(ReadAll(fd, reply, sizeof(reply)), sizeof(reply));
  EXPECT_EQ(std::string(reply),
            "0000:000033:000777:00000000000000000000ffff0a63000a");
  ASSERT_EQ(write(fd, "done", 5), 5);
  char eof;
  EXPECT_EQ(read(fd, &eof, 1), 0);  // the server closed
  close(fd);
  server.join();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->qpn, 0xAAu);
  EXPECT_EQ(got->psn, 0xBBBBu);
  EXPECT_EQ(got->gid, MappedGid(10, 99, 0, 1));
}

TEST(ExchangeTest, ConnectFailureLeavesTheClientWithoutAnAnswer) {
  auto listener = ExchangeListener::Listen(0);
  ASSERT_TRUE(listener.ok()) << listener.status();
  const uint16_t port = listener->port();
  absl::StatusOr<Dest> got;
  std::thread server([&] {
    got = listener->Serve(
        Dest{},
        [](const Dest&) {
          return absl::FailedPreconditionError("Failed to modify QP to RTR");
        },
        5000);
  });
  auto client = ClientExchange("127.0.0.1", port, Dest{}, 5000);
  server.join();
  EXPECT_EQ(got.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(client.ok());
  EXPECT_NE(client.status().message().find("Couldn't read remote address"),
            std::string::npos)
      << client.status();
}

TEST(ExchangeTest, GarbageAndShortRecordsAreErrors) {
  for (const std::string& junk :
       {std::string(52, 'x'), std::string("0000:000011:")}) {
    auto listener = ExchangeListener::Listen(0);
    ASSERT_TRUE(listener.ok()) << listener.status();
    const uint16_t port = listener->port();
    bool connected = false;
    absl::StatusOr<Dest> got;
    std::thread server([&] {
      got = listener->Serve(
          Dest{},
          [&](const Dest&) {
            connected = true;
            return absl::OkStatus();
          },
          5000);
    });
    const int fd = ConnectLoopback(port);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, junk.data(), junk.size()), ssize_t(junk.size()));
    shutdown(fd, SHUT_WR);
    server.join();
    close(fd);
    EXPECT_FALSE(got.ok()) << junk;
    EXPECT_FALSE(connected) << junk;
  }
}

TEST(ExchangeTest, ServerTimesOutWithoutAClientAndClientWithoutAServer) {
  auto listener = ExchangeListener::Listen(0);
  ASSERT_TRUE(listener.ok()) << listener.status();
  const uint16_t port = listener->port();
  auto got = listener->Serve(
      Dest{}, [](const Dest&) { return absl::OkStatus(); }, 100);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDeadlineExceeded);
  // The listener is closed after one Serve: nobody accepts on the port.
  auto client = ClientExchange("127.0.0.1", port, Dest{}, 1000);
  EXPECT_FALSE(client.ok());
}

// --- the message flow -------------------------------------------------------

// Two flows against each other through an ideal network: a SEND posted by
// one side completes (is ACKed) and arrives at the other, in an order the
// test picks. The sides must alternate and both end with iters each way.
struct Side {
  PingpongFlow flow;
  std::deque<uint64_t> cq;  // completions to deliver
  uint32_t recvs_refilled = 0;
  uint32_t sends_posted = 0;
};

void Drive(Side& me, Side& peer, bool* ok) {
  while (!me.cq.empty()) {
    const uint64_t wr_id = me.cq.front();
    me.cq.pop_front();
    const PingpongFlow::Step s = me.flow.OnCompletion(wr_id, true);
    if (s.error != FlowError::kNone) *ok = false;
    if (s.recvs_to_post > 0) {
      me.recvs_refilled += s.recvs_to_post;
      if (!me.flow.RecvsPosted(s.recvs_to_post)) *ok = false;
    }
    if (s.post_send) {
      ++me.sends_posted;
      me.cq.push_back(kSendWrId);
      peer.cq.push_back(kRecvWrId);
    }
  }
}

TEST(FlowTest, ClientAndServerAlternateUntilItersEachWay) {
  for (uint32_t rx_depth : {1u, 2u, 3u, 500u}) {
    const uint32_t iters = 10;
    Side client{PingpongFlow(iters, rx_depth, true)};
    Side server{PingpongFlow(iters, rx_depth, false)};
    ASSERT_TRUE(client.flow.InitialRecvsPosted(rx_depth));
    ASSERT_TRUE(server.flow.InitialRecvsPosted(rx_depth));
    EXPECT_FALSE(server.flow.Start());  // the server waits
    ASSERT_TRUE(client.flow.Start());   // the client sends first
    client.sends_posted = 1;
    client.cq.push_back(kSendWrId);
    server.cq.push_back(kRecvWrId);
    bool ok = true;
    for (int round = 0;
         round < 100 && !(client.flow.Done() && server.flow.Done()); ++round) {
      Drive(server, client, &ok);
      Drive(client, server, &ok);
    }
    EXPECT_TRUE(ok);
    EXPECT_TRUE(client.flow.Done()) << rx_depth;
    EXPECT_TRUE(server.flow.Done()) << rx_depth;
    EXPECT_EQ(client.sends_posted, iters);
    EXPECT_EQ(server.sends_posted, iters);
    EXPECT_EQ(client.flow.received(), iters);
    // Every receive that completed was replaced, in bursts.
    EXPECT_GE(client.flow.posted_recvs(), rx_depth == 1 ? 1u : 2u);
    EXPECT_LE(client.flow.posted_recvs(), rx_depth);
  }
}

TEST(FlowTest, NextSendWaitsForBothTheAckAndThePeersMessage) {
  PingpongFlow f(3, 8, true);
  ASSERT_TRUE(f.InitialRecvsPosted(8));
  ASSERT_TRUE(f.Start());
  // The peer's reply arrives before our SEND's completion: no send yet.
  PingpongFlow::Step s = f.OnCompletion(kRecvWrId, true);
  EXPECT_FALSE(s.post_send);
  s = f.OnCompletion(kSendWrId, true);
  EXPECT_TRUE(s.post_send);
  // And the other way round.
  s = f.OnCompletion(kSendWrId, true);
  EXPECT_FALSE(s.post_send);
  s = f.OnCompletion(kRecvWrId, true);
  EXPECT_TRUE(s.post_send);
  // The third SEND is the last: after it, no more sends.
  s = f.OnCompletion(kSendWrId, true);
  EXPECT_FALSE(s.post_send);
  s = f.OnCompletion(kRecvWrId, true);
  EXPECT_FALSE(s.post_send);
  EXPECT_TRUE(f.Done());
  EXPECT_EQ(f.sent(), 3u);
  EXPECT_EQ(f.received(), 3u);
}

TEST(FlowTest, RefillsWhenAtMostOneReceiveIsLeft) {
  PingpongFlow f(100, 4, false);
  ASSERT_TRUE(f.InitialRecvsPosted(4));
  f.Start();
  EXPECT_EQ(f.OnCompletion(kRecvWrId, true).recvs_to_post, 0u);  // 3 left
  EXPECT_EQ(f.OnCompletion(kSendWrId, true).recvs_to_post, 0u);
  EXPECT_EQ(f.OnCompletion(kRecvWrId, true).recvs_to_post, 0u);  // 2 left
  EXPECT_EQ(f.OnCompletion(kSendWrId, true).recvs_to_post, 0u);
  const PingpongFlow::Step s = f.OnCompletion(kRecvWrId, true);  // 1 left
  EXPECT_EQ(s.recvs_to_post, 3u);
  EXPECT_FALSE(f.RecvsPosted(2));  // short: "Couldn't post receive"
  EXPECT_FALSE(PingpongFlow(1, 4, true).InitialRecvsPosted(3));
}

TEST(FlowTest, ErrorCompletionsAndUnknownIds) {
  PingpongFlow f(5, 8, true);
  ASSERT_TRUE(f.InitialRecvsPosted(8));
  f.Start();
  EXPECT_EQ(f.OnCompletion(kSendWrId, false).error, FlowError::kBadStatus);
  EXPECT_EQ(f.OnCompletion(7, true).error, FlowError::kUnknownWrId);
  EXPECT_EQ(f.sent(), 0u);
  EXPECT_EQ(f.received(), 0u);
}

// --- the command line -------------------------------------------------------

absl::StatusOr<Options> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "rocemu-pingpong");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return ParseOptions(static_cast<int>(args.size()), argv.data());
}

TEST(OptionsTest, DefaultsAreTheRdmaCoreTools) {
  auto rc = Parse({"rc"});
  ASSERT_TRUE(rc.ok()) << rc.status();
  EXPECT_EQ(rc->transport, Transport::kRc);
  EXPECT_EQ(rc->tcp_port, 18515);
  EXPECT_EQ(rc->ib_port, 1);
  EXPECT_EQ(rc->size, 4096u);
  EXPECT_EQ(rc->mtu, 1024u);
  EXPECT_EQ(rc->rx_depth, 500u);
  EXPECT_EQ(rc->iters, 1000u);
  EXPECT_EQ(rc->gid_index, -1);
  EXPECT_TRUE(rc->server.empty());
  auto ud = Parse({"ud"});
  ASSERT_TRUE(ud.ok()) << ud.status();
  EXPECT_EQ(ud->transport, Transport::kUd);
  EXPECT_EQ(ud->size, 1024u);
}

TEST(OptionsTest, EveryOptionShortAndLongAndTheServerAnywhere) {
  auto o =
      Parse({"rc", "-p", "20000", "-d",        "/tmp/v.sock", "-i",
             "1",  "-s", "64",    "-m",        "2048",        "-r",
             "16", "-n", "0x10",  "-l",        "3",           "-e",
             "-g", "0",  "-c",    "10.99.0.1", "--verify",    "--timeout=30"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->tcp_port, 20000);
  EXPECT_EQ(o->device, "/tmp/v.sock");
  EXPECT_EQ(o->size, 64u);
  EXPECT_EQ(o->mtu, 2048u);
  EXPECT_EQ(o->rx_depth, 16u);
  EXPECT_EQ(o->iters, 16u);
  EXPECT_EQ(o->sl, 3);
  EXPECT_TRUE(o->events);
  EXPECT_EQ(o->gid_index, 0);
  EXPECT_TRUE(o->chk);
  EXPECT_TRUE(o->verify);
  EXPECT_EQ(o->timeout_ms, 30000);
  EXPECT_EQ(o->server, "10.99.0.1");
  auto l = Parse({"ud", "--port=1", "--ib-dev=/s", "--size=32", "--rx-depth=2",
                  "--iters=3", "--sl=1", "--events", "--gid-idx=1", "--chk",
                  "host"});
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->tcp_port, 1);
  EXPECT_EQ(l->device, "/s");
  EXPECT_EQ(l->size, 32u);
  EXPECT_EQ(l->iters, 3u);
  EXPECT_EQ(l->gid_index, 1);
  EXPECT_EQ(l->server, "host");
  auto m = Parse({"rc", "-o", "-P", "-t", "-j", "-N"});
  EXPECT_FALSE(m.ok());  // -o with -j: "DM memory region can't be on demand"
  auto odp = Parse({"rc", "--odp", "--prefetch", "--ts", "--new_send"});
  ASSERT_TRUE(odp.ok()) << odp.status();
  EXPECT_TRUE(odp->odp && odp->prefetch && odp->timestamps && odp->new_send);
}

TEST(OptionsTest, BadCommandLinesAreRefused) {
  EXPECT_FALSE(Parse({}).ok());
  EXPECT_FALSE(Parse({"uc"}).ok());
  EXPECT_FALSE(Parse({"ud", "-m", "1024"}).ok());  // no -m in ud_pingpong
  EXPECT_FALSE(Parse({"ud", "-o"}).ok());
  EXPECT_FALSE(Parse({"rc", "-m", "1000"}).ok());
  EXPECT_FALSE(Parse({"rc", "-m", "8192"}).ok());
  EXPECT_FALSE(Parse({"rc", "-p", "70000"}).ok());
  EXPECT_FALSE(Parse({"rc", "-n", "0"}).ok());
  EXPECT_FALSE(Parse({"rc", "-n", "12x"}).ok());
  EXPECT_FALSE(Parse({"rc", "-r", "0"}).ok());
  EXPECT_FALSE(Parse({"rc", "-i", "0"}).ok());
  EXPECT_FALSE(Parse({"rc", "-s"}).ok());
  EXPECT_FALSE(Parse({"rc", "-x"}).ok());
  EXPECT_FALSE(Parse({"rc", "a", "b"}).ok());
  EXPECT_FALSE(Parse({"rc", "-P"}).ok());  // prefetch needs -o
  EXPECT_FALSE(Parse({"rc", "--timeout=0"}).ok());
  // A parse after a failed one starts afresh (getopt's global state).
  EXPECT_TRUE(Parse({"rc", "-n", "5"}).ok());
}

// --- payload checks ---------------------------------------------------------

TEST(PayloadTest, PatternDependsOnSeedAndOffset) {
  std::vector<uint8_t> a(4096), b(4096), c(4096);
  FillPattern(a, PatternSeed(0x11, 0x123456));
  FillPattern(b, PatternSeed(0x11, 0x123456));
  FillPattern(c, PatternSeed(0x11, 0x123457));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // Swapping two 1 KiB segments (a misplaced packet) is seen.
  std::vector<uint8_t> swapped = a;
  std::swap_ranges(swapped.begin(), swapped.begin() + 1024,
                   swapped.begin() + 1024);
  auto bad = FirstMismatch(swapped, a);
  ASSERT_TRUE(bad.has_value());
  EXPECT_LT(*bad, 1024u);
  EXPECT_FALSE(FirstMismatch(a, b).has_value());
  EXPECT_EQ(FirstMismatch(std::span<const uint8_t>(a).first(100), a), 100u);
  a[4000] ^= 1;
  EXPECT_EQ(FirstMismatch(a, b), 4000u);
}

TEST(PayloadTest, PageMarksAsTheChkOption) {
  std::vector<uint8_t> buf(3 * 4096 + 10, kFillByte);
  EXPECT_EQ(BadPages(buf, 4096), (std::vector<size_t>{0, 1, 2, 3}));
  MarkPages(buf, 4096);
  EXPECT_TRUE(BadPages(buf, 4096).empty());
  buf[2 * 4096] = 5;
  EXPECT_EQ(BadPages(buf, 4096), std::vector<size_t>{2});
}

TEST(PayloadTest, GrhAreaNamesThePeer) {
  std::vector<uint8_t> grh(kGrhSize, 0);
  grh[20] = 0x45;  // IPv4, IHL 5
  grh[32] = 10;
  grh[33] = 99;
  grh[34] = 0;
  grh[35] = 1;
  EXPECT_TRUE(GrhFromPeer(grh, MappedGid(10, 99, 0, 1)));
  EXPECT_FALSE(GrhFromPeer(grh, MappedGid(10, 99, 0, 2)));
  grh[20] = 0x65;
  EXPECT_FALSE(GrhFromPeer(grh, MappedGid(10, 99, 0, 1)));
  std::vector<uint8_t> v6(kGrhSize, 0);
  Gid peer{};
  peer[0] = 0xFE;
  peer[1] = 0x80;
  peer[15] = 9;
  v6[0] = 0x60;
  std::memcpy(v6.data() + 8, peer.data(), 16);
  EXPECT_TRUE(GrhFromPeer(v6, peer));
  v6[23] = 8;
  EXPECT_FALSE(GrhFromPeer(v6, peer));
  EXPECT_FALSE(GrhFromPeer(std::span<const uint8_t>(v6).first(39), peer));
}

TEST(PayloadTest, EchoVerifierSkipsOnlyTheServersFirstMessage) {
  const std::vector<uint8_t> sent(64, 1), other(64, 2);
  EchoVerifier server(false);
  EXPECT_FALSE(server.Check(other, sent).has_value());  // client's choice
  EXPECT_EQ(server.Check(other, sent), 0u);
  EXPECT_FALSE(server.Check(sent, sent).has_value());
  EchoVerifier client(true);
  EXPECT_EQ(client.Check(other, sent), 0u);
  EXPECT_FALSE(client.Check(sent, sent).has_value());
  EXPECT_EQ(client.messages(), 2u);
}

}  // namespace
}  // namespace rocemu::pingpong
