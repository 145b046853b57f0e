// rocemu-codec-demo: writes one frame of every kind the codec builds to a
// pcap file (see demo_frames.h), for Wireshark and the capture oracles.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_format.h"
#include "emulator/tools/demo_frames.h"
#include "emulator/tools/pcap_file_writer.h"

ABSL_FLAG(std::string, manifest, "",
          "also write FILE with one line per frame: number, kind, BTH opcode "
          "(-1 for PFC/PAUSE) and a label, tab-separated");
ABSL_FLAG(std::string, corpus_dir, "",
          "also write each frame to DIR/demo-NNN.bin (fuzzer seed corpus)");

namespace rocemu::tools {
namespace {

// Fixed timestamps keep the committed capture reproducible byte for byte.
constexpr uint64_t kEpochUsec = 1700000000ull * 1000000;
constexpr uint64_t kGapUsec = 10;

int Run(const std::string& out_path) {
  absl::StatusOr<std::vector<DemoFrame>> frames = BuildDemoFrames();
  if (!frames.ok()) {
    std::fprintf(stderr, "rocemu-codec-demo: %s\n",
                 frames.status().ToString().c_str());
    return 1;
  }
  PcapFileWriter pcap;
  if (absl::Status s = pcap.Open(out_path); !s.ok()) {
    std::fprintf(stderr, "rocemu-codec-demo: %s\n", s.ToString().c_str());
    return 2;
  }
  for (size_t i = 0; i < frames->size(); ++i) {
    pcap.Write((*frames)[i].bytes, (kEpochUsec + i * kGapUsec) * 1000);
  }
  if (absl::Status s = pcap.Close(); !s.ok()) {
    std::fprintf(stderr, "rocemu-codec-demo: %s\n", s.ToString().c_str());
    return 2;
  }

  const std::string manifest = absl::GetFlag(FLAGS_manifest);
  if (!manifest.empty()) {
    std::ofstream m(manifest);
    for (size_t i = 0; i < frames->size(); ++i) {
      const DemoFrame& f = (*frames)[i];
      const bool roce = f.kind == protocol::FrameKind::kRoce;
      m << absl::StrFormat("%u\t%s\t%d\t%s\n", i + 1,
                           protocol::FrameKindName(f.kind),
                           roce ? int{f.opcode} : -1, f.label);
    }
    if (!m.good()) {
      std::fprintf(stderr, "rocemu-codec-demo: cannot write %s\n",
                   manifest.c_str());
      return 2;
    }
  }
  const std::string corpus = absl::GetFlag(FLAGS_corpus_dir);
  if (!corpus.empty()) {
    for (size_t i = 0; i < frames->size(); ++i) {
      const std::string path =
          absl::StrFormat("%s/demo-%03u.bin", corpus, i + 1);
      std::ofstream f(path, std::ios::binary);
      f.write(reinterpret_cast<const char*>((*frames)[i].bytes.data()),
              static_cast<std::streamsize>((*frames)[i].bytes.size()));
      if (!f.good()) {
        std::fprintf(stderr, "rocemu-codec-demo: cannot write %s\n",
                     path.c_str());
        return 2;
      }
    }
  }
  std::printf("rocemu-codec-demo: wrote %zu frames to %s\n", frames->size(),
              out_path.c_str());
  return 0;
}

}  // namespace
}  // namespace rocemu::tools

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "rocemu-codec-demo [--manifest FILE] [--corpus_dir DIR] OUT.pcap\n"
      "Writes one frame of every RoCEv2 opcode, CNP, PFC and PAUSE to OUT.");
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() != 2) {
    std::fprintf(stderr, "usage: %s [--manifest FILE] OUT.pcap\n", argv[0]);
    return 2;
  }
  return rocemu::tools::Run(args[1]);
}
