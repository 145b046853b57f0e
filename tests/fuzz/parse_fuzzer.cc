// libFuzzer target for the frame parser (protocol::ParseFrame) and the MAC
// Control parser (protocol::ParseMacControl). Besides "no crash, no sanitizer
// report" it checks invariants that tie the parser to the builder; any
// violation aborts so that libFuzzer records the input.
//  1. A frame accepted with every check on is accepted, and decoded the same,
//     with the checks off.
//  2. The zero-copy payload view lies inside the input.
//  3. A RoCE frame that parses (checks off) re-encodes from its decoded
//     fields to the same bytes: exactly, if it passed every check; apart from
//     the IPv4/UDP checksums and the ICRC otherwise, and the re-encoded frame
//     then passes every check with the same decoded headers.
//  4. A PFC/PAUSE frame that parses re-encodes to the same MAC Control
//     parameters.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>

#include "protocol/frame.h"
#include "protocol/icrc.h"
#include "protocol/pfc.h"

namespace rocemu::protocol {
namespace {

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "parse_fuzzer: invariant violated: %s\n", what);
  std::abort();
}

void Require(bool cond, const char* what) {
  if (!cond) Fail(what);
}

bool SameDecode(const ParsedFrame& a, const ParsedFrame& b) {
  return a.kind == b.kind && a.ethertype == b.ethertype && a.net == b.net &&
         a.hdr == b.hdr && a.payload.data() == b.payload.data() &&
         a.payload.size() == b.payload.size() && a.icrc == b.icrc &&
         a.pfc == b.pfc;
}

// Byte ranges the lenient comparison skips: values the builder recomputes.
struct Skip {
  size_t begin;
  size_t len;
};

bool Skipped(size_t i, std::span<const Skip> skips) {
  for (const Skip& s : skips) {
    if (i >= s.begin && i < s.begin + s.len) return true;
  }
  return false;
}

void CheckRoce(std::span<const uint8_t> in, const ParsedFrame& p,
               bool strict_ok) {
  static std::array<uint8_t, 65536> out;
  const FrameSpec spec = SpecFromParsed(p);
  BuildError err = BuildError::kOk;
  const size_t n = BuildRoceFrame(spec, p.payload, out, &err);
  if (n == 0) {
    // The parser takes any payload that fits the frame; the builder refuses
    // more than the largest PMTU.
    Require(err == BuildError::kPayloadTooLarge && p.payload.size() > 4096,
            "a parsed RoCE frame cannot be re-encoded");
    return;
  }
  // Anything after the rebuilt frame is Ethernet padding of a short frame.
  Require(n <= in.size(), "re-encoded frame longer than the input");
  Require(n == in.size() || in.size() <= kEthMinFrameLen,
          "parser accepted trailing bytes after a RoCE frame");

  const size_t l3 = p.l3_offset;
  const size_t udp = l3 + (p.net.ipv6 ? kIpv6HeaderLen : kIpv4HeaderLen);
  const size_t pad = p.hdr.bth.pad_cnt;
  bool pad_zero = true;
  for (size_t i = n - kIcrcLen - pad; i < n - kIcrcLen; ++i) {
    pad_zero &= in[i] == 0;
  }
  // The builder writes zero pad bytes; the parser does not require them.
  const Skip pad_skip{n - kIcrcLen - pad, pad_zero ? 0 : pad + kIcrcLen};
  if (strict_ok) {
    const Skip skips[] = {pad_skip};
    for (size_t i = 0; i < n; ++i) {
      if (!Skipped(i, skips) && out[i] != in[i]) {
        std::fprintf(stderr, "byte %zu: input 0x%02x, re-encoded 0x%02x\n", i,
                     in[i], out[i]);
        Fail("valid frame does not re-encode byte for byte");
      }
    }
  } else {
    const Skip skips[] = {
        pad_skip,
        {p.net.ipv6 ? 0 : l3 + 10, p.net.ipv6 ? 0u : 2u},  // IPv4 checksum
        {udp + 6, 2},                                      // UDP checksum
        {n - kIcrcLen, kIcrcLen},
    };
    for (size_t i = 0; i < n; ++i) {
      if (!Skipped(i, skips) && out[i] != in[i]) {
        std::fprintf(stderr, "byte %zu: input 0x%02x, re-encoded 0x%02x\n", i,
                     in[i], out[i]);
        Fail("frame does not re-encode apart from checksums and ICRC");
      }
    }
  }
  ParsedFrame again;
  const ParseError e =
      ParseFrame(std::span<const uint8_t>(out.data(), n), &again);
  if (e != ParseError::kOk) {
    std::fprintf(stderr, "re-encoded frame: %s\n",
                 std::string(ParseErrorName(e)).c_str());
    Fail("re-encoded frame does not pass the parser");
  }
  Require(again.net == p.net && again.hdr == p.hdr &&
              again.payload.size() == p.payload.size() &&
              std::memcmp(again.payload.data(), p.payload.data(),
                          p.payload.size()) == 0,
          "re-encoded frame decodes differently");
  Require(
      VerifyIcrc(std::span<const uint8_t>(out.data() + l3, n - l3), p.net.ipv6),
      "builder wrote an ICRC that VerifyIcrc rejects");
}

void CheckMacControl(std::span<const uint8_t> in) {
  PfcInfo pfc;
  bool is_pfc = false;
  if (ParseMacControl(in, &pfc, &is_pfc) != ParseError::kOk) return;
  std::array<uint8_t, kMacControlFrameLen> out{};
  MacAddr src;
  std::memcpy(src.data(), in.data() + 6, 6);
  const size_t n = is_pfc ? BuildPfcFrame(src, pfc, out)
                          : BuildPauseFrame(src, pfc.quanta[0], out);
  Require(n == out.size(), "cannot re-encode a parsed MAC Control frame");
  // Source MAC, EtherType, opcode and parameters; PAUSE may have gone to a
  // unicast DA and pad bytes are not inspected.
  const size_t params = is_pfc ? 2 + 2 + 16 : 2 + 2;
  Require(in.size() >= kEthHeaderLen + params &&
              std::memcmp(in.data() + 6, out.data() + 6,
                          kEthHeaderLen - 6 + params) == 0,
          "MAC Control frame does not re-encode");
  if (is_pfc) {
    Require(std::memcmp(in.data(), out.data(), 6) == 0,
            "PFC accepted with a DA other than 01-80-C2-00-00-01");
  }
}

void FuzzOne(std::span<const uint8_t> in) {
  ParsedFrame strict;
  const ParseError strict_error = ParseFrame(in, &strict);
  ParseOptions off;
  off.verify_icrc = false;
  off.verify_ip_checksum = false;
  off.verify_udp_checksum = false;
  ParsedFrame p;
  const ParseError error = ParseFrame(in, &p, off);
  const bool strict_ok = strict_error == ParseError::kOk;
  if (strict_ok) {
    Require(error == ParseError::kOk && SameDecode(strict, p),
            "valid frame decodes differently without checks");
  }
  if (error == ParseError::kOk && p.kind == FrameKind::kRoce) {
    Require(p.op == &GetOpcodeInfo(p.hdr.bth.opcode) && p.op->supported,
            "accepted an unsupported opcode");
    Require(p.payload.empty() ||
                (p.payload.data() >= in.data() &&
                 p.payload.data() + p.payload.size() <= in.data() + in.size()),
            "payload view outside the frame");
    CheckRoce(in, p, strict_ok);
  }
  if (error == ParseError::kOk &&
      (p.kind == FrameKind::kPfc || p.kind == FrameKind::kPause)) {
    PfcInfo pfc;
    bool is_pfc = false;
    Require(ParseMacControl(in, &pfc, &is_pfc) == ParseError::kOk &&
                pfc == p.pfc && is_pfc == (p.kind == FrameKind::kPfc),
            "ParseFrame and ParseMacControl disagree");
  }
  CheckMacControl(in);
}

}  // namespace
}  // namespace rocemu::protocol

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rocemu::protocol::FuzzOne(std::span<const uint8_t>(data, size));
  return 0;
}
