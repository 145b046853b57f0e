// rocemu-decode: prints every frame of a pcap/pcapng file, decoded by the
// rocemu codec with the ICRC verified (which Wireshark does not do).
//
// Exit status: 0 all RoCEv2 and PFC/PAUSE frames valid, 1 at least one is
// invalid, 2 usage error or unreadable input.
#include <pcap/pcap.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "emulator/tools/frame_format.h"
#include "emulator/tools/frame_report.h"
#include "verbs/server/json_writer.h"

ABSL_FLAG(bool, json, false,
          "print one JSON object per frame (JSON Lines) instead of text; the "
          "fields are documented in docs/decoder.md");

namespace rocemu::tools {
namespace {

constexpr int kExitInvalid = 1;
constexpr int kExitUsage = 2;

int Decode(const char* path, bool json) {
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  // pcap_open_offline reads both pcap and pcapng.
  pcap_t* pcap = pcap_open_offline(path, errbuf);
  if (pcap == nullptr) {
    std::fprintf(stderr, "rocemu-decode: %s\n", errbuf);
    return kExitUsage;
  }
  if (pcap_datalink(pcap) != DLT_EN10MB) {
    std::fprintf(stderr,
                 "rocemu-decode: %s: link type %s, only Ethernet is decoded\n",
                 path, pcap_datalink_val_to_name(pcap_datalink(pcap)));
    pcap_close(pcap);
    return kExitUsage;
  }

  uint64_t frames = 0, ok = 0, invalid = 0, truncated = 0;
  std::string line;
  int rc;
  pcap_pkthdr* hdr = nullptr;
  const u_char* data = nullptr;
  while ((rc = pcap_next_ex(pcap, &hdr, &data)) == 1) {
    const FrameReport r = AnalyzeFrame(
        ++frames, std::span<const uint8_t>(data, hdr->caplen), hdr->len);
    ok += r.ok();
    invalid += r.invalid();
    truncated += r.truncated();
    if (json) {
      line = verbs::DumpJson(FrameJson(r));
    } else {
      line = FormatFrameText(r);
    }
    line.push_back('\n');
    std::fwrite(line.data(), 1, line.size(), stdout);
  }
  if (rc == PCAP_ERROR) {
    std::fprintf(stderr, "rocemu-decode: %s: frame %llu: %s\n", path,
                 static_cast<unsigned long long>(frames + 1),
                 pcap_geterr(pcap));
    pcap_close(pcap);
    return kExitUsage;
  }
  pcap_close(pcap);
  // In JSON mode stdout stays pure JSON Lines, so the summary goes to stderr.
  std::fprintf(json ? stderr : stdout,
               "rocemu-decode: %s: %llu frames, %llu ok, %llu invalid, %llu "
               "truncated\n",
               path, static_cast<unsigned long long>(frames),
               static_cast<unsigned long long>(ok),
               static_cast<unsigned long long>(invalid),
               static_cast<unsigned long long>(truncated));
  return invalid ? kExitInvalid : 0;
}

}  // namespace
}  // namespace rocemu::tools

// absl::ParseCommandLine exits with status 1 on an unknown flag; usage errors
// must exit 2 so that scripts can tell them from invalid frames.
bool OnlyKnownFlags(int argc, char** argv) {
  static constexpr std::string_view kKnown[] = {
      "json",      "nojson",      "help",    "helpfull",
      "helpshort", "helppackage", "version", "only_check_args"};
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--") break;
    if (a.size() < 2 || a[0] != '-') continue;
    a.remove_prefix(a[1] == '-' ? 2 : 1);
    a = a.substr(0, a.find('='));
    bool known = false;
    for (std::string_view k : kKnown) known |= a == k;
    if (!known) return false;
  }
  return true;
}

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "rocemu-decode [--json] FILE.pcap|FILE.pcapng\n"
      "Decodes every frame with the rocemu codec and verifies RoCEv2 ICRCs.\n"
      "Exit status: 0 all RoCEv2/PFC/PAUSE frames valid, 1 some invalid, "
      "2 usage error or unreadable input.");
  if (!OnlyKnownFlags(argc, argv)) {
    std::fprintf(stderr, "usage: %s [--json] FILE.pcap\n", argv[0]);
    return rocemu::tools::kExitUsage;
  }
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() != 2) {
    std::fprintf(stderr, "usage: %s [--json] FILE.pcap\n", argv[0]);
    return rocemu::tools::kExitUsage;
  }
  return rocemu::tools::Decode(args[1], absl::GetFlag(FLAGS_json));
}
