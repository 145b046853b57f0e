// rocemu-perf: perftest-like bandwidth and latency tests (WRITE, READ,
// SEND, atomics) over the rocemu verbs library. See PerfUsage() and
// docs/performance.md.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "verbs/tools/perf_exchange.h"
#include "verbs/tools/perf_options.h"
#include "verbs/tools/perf_runner.h"

namespace rocemu::verbs::perf {
namespace {

// Both sides say whether they got this far, so a failure on one side (a
// refused registration, a mismatched test) ends the other with its reason
// instead of a protocol error.
absl::Status SetupBarrier(Channel& ch, const absl::Status& mine,
                          int timeout_ms) {
  SyncMsg m;
  m.kind = SyncKind::kReady;
  m.ok = mine.ok() ? 1 : 0;
  if (!mine.ok()) {
    std::snprintf(m.what, sizeof(m.what), "%s",
                  std::string(mine.message()).c_str());
  }
  if (absl::Status s = ch.Send(m); !s.ok()) return mine.ok() ? s : mine;
  if (!mine.ok()) return mine;
  return ch.Expect(SyncKind::kReady, timeout_ms).status();
}

absl::Status Main(int argc, char** argv) {
  absl::StatusOr<PerfOptions> parsed = ParsePerfOptions(argc, argv);
  if (!parsed.ok()) {
    if (absl::IsCancelled(parsed.status())) {
      std::fputs(PerfUsage(argv[0]).c_str(), stdout);
      return absl::OkStatus();
    }
    std::fprintf(stderr, "rocemu-perf: %s\n%s",
                 std::string(parsed.status().message()).c_str(),
                 PerfUsage(argv[0]).c_str());
    std::exit(2);
  }
  PerfOptions o = *std::move(parsed);
  const int timeout_ms = static_cast<int>(o.timeout_s) * 1000;
  // Like perftest's server, wait for a client as long as it takes.
  absl::StatusOr<Channel> channel =
      o.is_server() ? Channel::Accept(o.tcp_port, -1)
                    : Channel::Connect(o.server_ip, o.tcp_port, timeout_ms);
  if (!channel.ok()) return channel.status();
  Channel& ch = *channel;
  // The client's parameters rule (sizes, iterations, QPs, depth, verify).
  if (o.is_server()) {
    ParamsMsg m;
    if (absl::Status s = ch.Recv(&m, timeout_ms); !s.ok()) return s;
    absl::StatusOr<PerfOptions> adopted = ParamsFromMsg(m, o);
    if (!adopted.ok()) {
      SetupBarrier(ch, adopted.status(), timeout_ms).IgnoreError();
      return adopted.status();
    }
    o = *std::move(adopted);
    if (absl::Status s = SetupBarrier(ch, absl::OkStatus(), timeout_ms);
        !s.ok()) {
      return s;
    }
  } else {
    if (absl::Status s = ch.Send(ParamsToMsg(o)); !s.ok()) return s;
    if (absl::Status s = ch.Expect(SyncKind::kReady, timeout_ms).status();
        !s.ok()) {
      return s;
    }
    if (absl::Status s = ch.Send(SyncMsg{}); !s.ok()) return s;
  }
  absl::StatusOr<std::unique_ptr<PerfRunner>> runner =
      PerfRunner::Create(o, &ch);
  if (absl::Status s = SetupBarrier(ch, runner.status(), timeout_ms); !s.ok()) {
    return s;
  }
  return (*runner)->Run();
}

}  // namespace
}  // namespace rocemu::verbs::perf

int main(int argc, char** argv) {
  const absl::Status s = rocemu::verbs::perf::Main(argc, argv);
  if (s.ok()) return 0;
  std::fprintf(stderr, "rocemu-perf: %s\n", std::string(s.message()).c_str());
  return 1;
}
