// Codec throughput next to its ceilings, measured in the same run:
//   ParseVerify  ParseFrame with every check (IPv4 checksum, ICRC) on
//   ParseNoIcrc  the same without the ICRC check (header parsing cost)
//   BuildIcrc    BuildRoceFrame: headers, payload copy, pad, checksum, ICRC
//   VerifyIcrc   VerifyIcrc alone over the IP..ICRC bytes
//   Memcpy       memcpy of the whole frame (the copy ceiling)
//   ZlibCrc32    zlib's crc32 over the whole frame (the baseline)
//   IsalCrc32    ISA-L crc32_gzip_refl over the whole frame (CRC ceiling),
//                through protocol::Crc32 as the codec calls it
// The argument is the RoCE payload size; bytes/s count whole frames, so all
// rows of one size move the same bytes. scripts/bench_codec.sh prints ratios.
//
// The sender's two ways to a WRITE ONLY frame (issue 37), headers from a
// path template as a connected QP writes them:
//   SendCopyThenIcrc  copy the payload in, then the ICRC over the frame
//   SendCopyFusedIcrc the copy and the CRC in one walk (icrc_copy.h)
// The second argument is 1 when the payload comes from a 256 MiB region
// walked in order (out of cache, as perftest's buffers), 0 when it is the
// same bytes every time (in cache).
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "benchmark/benchmark.h"
#include "protocol/crc32.h"
#include "protocol/frame.h"
#include "protocol/icrc.h"
#include "protocol/icrc_copy.h"
#include "protocol/net_header_template.h"

namespace rocemu::protocol {
namespace {

FrameSpec SendOnlySpec() {
  FrameSpec spec;
  spec.net.dst_mac = {0x02, 0, 0, 0, 0, 0x0B};
  spec.net.src_mac = {0x02, 0, 0, 0, 0, 0x0A};
  spec.net.src_ip = Ipv4Mapped(10, 0, 0, 1);
  spec.net.dst_ip = Ipv4Mapped(10, 0, 0, 2);
  spec.hdr.bth.opcode = kRcSendOnly;
  spec.hdr.bth.dest_qp = 0x12;
  spec.hdr.bth.psn = 100;
  return spec;
}

struct Fixture {
  explicit Fixture(size_t payload_len) : payload(payload_len) {
    for (size_t i = 0; i < payload_len; ++i) {
      payload[i] = static_cast<uint8_t>(i * 131);
    }
    frame.resize(RoceFrameLength(spec.net, kRcSendOnly, payload_len));
    frame.resize(BuildRoceFrame(spec, payload, frame));
  }
  FrameSpec spec = SendOnlySpec();
  std::vector<uint8_t> payload;
  std::vector<uint8_t> frame;
};

void Count(benchmark::State& state, size_t frame_len) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * frame_len));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.counters["frame_bytes"] = static_cast<double>(frame_len);
}

void BM_ParseVerify(benchmark::State& state) {
  Fixture f(static_cast<size_t>(state.range(0)));
  ParsedFrame p;
  for (auto _ : state) {
    benchmark::DoNotOptimize(f.frame.data());
    const ParseError e = ParseFrame(f.frame, &p);
    benchmark::DoNotOptimize(e);
    benchmark::DoNotOptimize(p);
    if (e != ParseError::kOk) state.SkipWithError("frame does not parse");
  }
  Count(state, f.frame.size());
}

// The same parse with the ICRC check off: what the header parsing costs.
void BM_ParseNoIcrc(benchmark::State& state) {
  Fixture f(static_cast<size_t>(state.range(0)));
  ParseOptions options;
  options.verify_icrc = false;
  ParsedFrame p;
  for (auto _ : state) {
    benchmark::DoNotOptimize(f.frame.data());
    const ParseError e = ParseFrame(f.frame, &p, options);
    benchmark::DoNotOptimize(e);
    benchmark::DoNotOptimize(p);
    if (e != ParseError::kOk) state.SkipWithError("frame does not parse");
  }
  Count(state, f.frame.size());
}

void BM_BuildIcrc(benchmark::State& state) {
  Fixture f(static_cast<size_t>(state.range(0)));
  std::vector<uint8_t> out(f.frame.size());
  for (auto _ : state) {
    f.spec.hdr.bth.psn = (f.spec.hdr.bth.psn + 1) & kPsnMask;
    const size_t n = BuildRoceFrame(f.spec, f.payload, out);
    benchmark::DoNotOptimize(n);
    benchmark::ClobberMemory();
  }
  Count(state, f.frame.size());
}

void BM_VerifyIcrc(benchmark::State& state) {
  Fixture f(static_cast<size_t>(state.range(0)));
  const std::span<const uint8_t> l3(f.frame.data() + kEthHeaderLen,
                                    f.frame.size() - kEthHeaderLen);
  for (auto _ : state) {
    benchmark::DoNotOptimize(f.frame.data());
    const bool ok = VerifyIcrc(l3, false);
    benchmark::DoNotOptimize(ok);
  }
  Count(state, f.frame.size());
}

void BM_Memcpy(benchmark::State& state) {
  Fixture f(static_cast<size_t>(state.range(0)));
  std::vector<uint8_t> out(f.frame.size());
  for (auto _ : state) {
    std::memcpy(out.data(), f.frame.data(), f.frame.size());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  Count(state, f.frame.size());
}

void BM_ZlibCrc32(benchmark::State& state) {
  Fixture f(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    benchmark::DoNotOptimize(f.frame.data());
    const uLong c =
        crc32(0L, f.frame.data(), static_cast<uInt>(f.frame.size()));
    benchmark::DoNotOptimize(c);
  }
  Count(state, f.frame.size());
}

void BM_IsalCrc32(benchmark::State& state) {
  Fixture f(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    benchmark::DoNotOptimize(f.frame.data());
    const uint32_t c = protocol::Crc32(0, f.frame);
    benchmark::DoNotOptimize(c);
  }
  Count(state, f.frame.size());
}

// The sender's region and where the next payload comes from in it.
class SendSource {
 public:
  SendSource(size_t payload_len, bool cold)
      : payload_len_(payload_len),
        region_(cold ? kColdBytes : payload_len + 64) {
    for (size_t i = 0; i < region_.size(); ++i) {
      region_[i] = static_cast<uint8_t>(i * 131);
    }
  }
  std::span<const uint8_t> Next() {
    if (at_ + payload_len_ > region_.size()) at_ = 0;
    const std::span<const uint8_t> s(region_.data() + at_, payload_len_);
    at_ += payload_len_;
    return s;
  }

 private:
  static constexpr size_t kColdBytes = size_t{256} << 20;
  size_t payload_len_;
  std::vector<uint8_t> region_;
  size_t at_ = 0;
};

template <bool kFused>
void SendWriteOnly(benchmark::State& state) {
  const size_t payload_len = static_cast<size_t>(state.range(0));
  SendSource src(payload_len, state.range(1) != 0);
  FrameSpec spec = SendOnlySpec();
  const NetHeaderTemplate net(spec.net);
  TransportHeaders hdr;
  hdr.bth.opcode = kRcRdmaWriteOnly;
  hdr.bth.dest_qp = 0x12;
  hdr.reth = {.va = 0x1000, .rkey = 0x42, .dma_len = 0};
  std::vector<uint8_t> out(
      RoceFrameLength(spec.net, hdr.bth.opcode, payload_len));
  for (auto _ : state) {
    hdr.bth.psn = (hdr.bth.psn + 1) & kPsnMask;
    const std::span<const uint8_t> payload = src.Next();
    RoceFrameWriter w;
    if (w.Begin(net, hdr, payload_len, out) != BuildError::kOk) {
      state.SkipWithError("frame does not build");
      break;
    }
    size_t n;
    if constexpr (kFused) {
      IcrcAccumulator acc;
      w.StartIcrc(acc);
      CopyAndUpdateIcrc(acc, w.payload(), payload);
      n = w.Finish(acc);
    } else {
      std::memcpy(w.payload().data(), payload.data(), payload_len);
      n = w.Finish();
    }
    benchmark::DoNotOptimize(n);
    benchmark::ClobberMemory();
  }
  Count(state, out.size());
}
void BM_SendCopyThenIcrc(benchmark::State& state) {
  SendWriteOnly<false>(state);
}
void BM_SendCopyFusedIcrc(benchmark::State& state) {
  SendWriteOnly<true>(state);
}

#define ROCEMU_SIZES Arg(64)->Arg(1024)->Arg(4096)
#define ROCEMU_SEND_ARGS \
  ArgsProduct({{64, 1024, 4096}, {0, 1}})->ArgNames({"payload", "cold"})
BENCHMARK(BM_ParseVerify)->ROCEMU_SIZES;
BENCHMARK(BM_ParseNoIcrc)->ROCEMU_SIZES;
BENCHMARK(BM_BuildIcrc)->ROCEMU_SIZES;
BENCHMARK(BM_VerifyIcrc)->ROCEMU_SIZES;
BENCHMARK(BM_Memcpy)->ROCEMU_SIZES;
BENCHMARK(BM_ZlibCrc32)->ROCEMU_SIZES;
BENCHMARK(BM_IsalCrc32)->ROCEMU_SIZES;
BENCHMARK(BM_SendCopyThenIcrc)->ROCEMU_SEND_ARGS;
BENCHMARK(BM_SendCopyFusedIcrc)->ROCEMU_SEND_ARGS;

}  // namespace
}  // namespace rocemu::protocol

BENCHMARK_MAIN();
