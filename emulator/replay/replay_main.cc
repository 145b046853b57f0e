// rocemu-replay: plays a pcap into an RNIC under virtual time and records
// what it answers. Exit status: 0 done, 1 the replay failed, 2 usage error
// or bad case file.
#include <cstdio>
#include <fstream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "emulator/replay/replay_case.h"
#include "emulator/replay/replay_runner.h"

ABSL_FLAG(std::string, case_file, "", "the replay case (YAML)");
ABSL_FLAG(std::string, out, "",
          "output: the frames the RNIC sent (a nanosecond pcap); named "
          "*.pcapng, the frames it received too, each with what the RNIC "
          "did with it (verdict, comment, packet id)");
ABSL_FLAG(std::string, summary, "",
          "also write the summary JSON here (it always goes to stdout)");
ABSL_FLAG(bool, check, false, "validate the case file only");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "rocemu-replay --case CASE.yaml --out OUT.pcap [--summary OUT.json]\n"
      "Feeds the case's input pcap to an RNIC under virtual time and writes "
      "what it sends.\nExit status: 0 done, 1 replay failed, 2 usage error or "
      "bad case file.");
  // --case reads better than --case_file; "case" is a C++ keyword, so the
  // spelling is mapped here.
  std::vector<std::string> args(argv, argv + argc);
  std::vector<char*> argp;
  for (std::string& a : args) {
    if (a == "--case") a = "--case_file";
    if (a.rfind("--case=", 0) == 0) a = "--case_file=" + a.substr(7);
    argp.push_back(a.data());
  }
  std::vector<char*> rest =
      absl::ParseCommandLine(static_cast<int>(argp.size()), argp.data());
  if (rest.size() != 1) {
    std::fprintf(stderr, "rocemu-replay: unexpected argument '%s'\n", rest[1]);
    return 2;
  }
  const std::string case_path = absl::GetFlag(FLAGS_case_file);
  const std::string out = absl::GetFlag(FLAGS_out);
  const bool check = absl::GetFlag(FLAGS_check);
  if (case_path.empty() || (out.empty() && !check)) {
    std::fprintf(stderr,
                 "rocemu-replay: --case and --out are required (see --help)\n");
    return 2;
  }
  absl::StatusOr<rocemu::replay::ReplayCase> c =
      rocemu::replay::LoadReplayCase(case_path);
  if (!c.ok()) {
    std::fprintf(stderr, "rocemu-replay: %s\n",
                 std::string(c.status().message()).c_str());
    return 2;
  }
  if (check) return 0;
  absl::StatusOr<std::string> summary = rocemu::replay::RunReplay(*c, out);
  if (!summary.ok()) {
    std::fprintf(stderr, "rocemu-replay: %s\n",
                 std::string(summary.status().message()).c_str());
    const absl::StatusCode code = summary.status().code();
    return code == absl::StatusCode::kFailedPrecondition ||
                   code == absl::StatusCode::kNotFound ||
                   code == absl::StatusCode::kInvalidArgument
               ? 2
               : 1;
  }
  std::fputs(summary->c_str(), stdout);
  const std::string json = absl::GetFlag(FLAGS_summary);
  if (!json.empty()) {
    std::ofstream f(json, std::ios::binary | std::ios::trunc);
    f << *summary;
    if (!f.good()) {
      std::fprintf(stderr, "rocemu-replay: %s: cannot write\n", json.c_str());
      return 1;
    }
  }
  return 0;
}
