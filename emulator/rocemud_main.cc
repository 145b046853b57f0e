// rocemud: the rocemu daemon. Loads and validates the YAML config (a bad
// config is one error line on stderr and exit status 2, before anything is
// set up), brings up EAL, ports and the control socket all or nothing, then
// polls until SIGTERM/SIGINT.
#include <csignal>
#include <cstdio>
#include <string>
#include <string_view>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "config/config.h"
#include "emulator/daemon.h"
#include "emulator/logging.h"
#include "emulator/port/rnic_port.h"

ABSL_FLAG(std::string, config, "/etc/rocemu/rocemu.yaml",
          "YAML configuration file");
ABSL_FLAG(bool, check_config, false,
          "validate the configuration, print the result and exit");
ABSL_FLAG(std::string, log_level, "",
          "overrides logging.level: debug, info, warning, error");
ABSL_FLAG(std::string, netdev, "",
          "run on this kernel interface beside the kernel, without a config "
          "file (device rocemu_IFACE; docs/daemon.md)");
ABSL_FLAG(std::string, run_dir, "/run/rocemu",
          "with --netdev: where the control and verbs sockets go "
          "(rocemud-IFACE.sock, verbs-IFACE.sock)");

namespace {

rocemu::emulator::DaemonSignals g_signals;

void OnStop(int) { g_signals.stop = 1; }
void OnHangup(int) { g_signals.reopen = 1; }

void InstallSignals() {
  struct sigaction sa {};
  sigemptyset(&sa.sa_mask);
  sa.sa_handler = OnStop;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  sa.sa_handler = OnHangup;
  sigaction(SIGHUP, &sa, nullptr);
  // A vhost/virtio peer or a control client that goes away must not kill
  // the daemon.
  signal(SIGPIPE, SIG_IGN);
}

// Abseil spells flags with underscores; operators type dashes
// (--check-config, --log-level). Both are accepted.
void DashesToUnderscores(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    char* a = argv[i];
    if (a[0] != '-' || a[1] != '-') continue;
    for (char* p = a + 2; *p != '\0' && *p != '='; ++p) {
      if (*p == '-') *p = '_';
    }
  }
}

// Whether --config was on the command line (its default is a path).
bool ConfigFlagGiven(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") break;
    if (a == "--config" || a.substr(0, 9) == "--config=") return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "rocemu RoCEv2 RNIC daemon.\n"
      "  rocemud --config FILE [--check-config]\n"
      "  rocemud --netdev IFACE [--run-dir DIR]   (RoCE on a kernel "
      "interface, as rxe)");
  DashesToUnderscores(argc, argv);
  absl::ParseCommandLine(argc, argv);
  using rocemu::config::Config;

  const std::string netdev = absl::GetFlag(FLAGS_netdev);
  if (!netdev.empty() && ConfigFlagGiven(argc, argv)) {
    std::fprintf(stderr,
                 "rocemud: --netdev and --config exclude each other (a config "
                 "file names its interface with ports[].netdev)\n");
    return 2;
  }
  const std::string path =
      netdev.empty() ? absl::GetFlag(FLAGS_config) : "--netdev " + netdev;
  absl::StatusOr<Config> config =
      netdev.empty()
          ? rocemu::config::LoadConfigFile(path)
          : rocemu::config::NetdevConfig(netdev, absl::GetFlag(FLAGS_run_dir));
  if (!config.ok()) {
    std::fprintf(stderr, "rocemud: %s\n",
                 std::string(config.status().message()).c_str());
    return 2;
  }
  if (std::string level = absl::GetFlag(FLAGS_log_level); !level.empty()) {
    absl::StatusOr<rocemu::config::LogLevel> l =
        rocemu::config::ParseLogLevel(level);
    if (!l.ok()) {
      std::fprintf(stderr, "rocemud: --log-level: %s\n",
                   std::string(l.status().message()).c_str());
      return 2;
    }
    config->logging.level = *l;
  }
  // What the YAML loader cannot judge alone (DCQCN/PFC parameters as a
  // whole, the link MTU against RoCEv2 framing) is checked by building each
  // port's RNIC settings, with a stand-in MAC: before anything starts.
  for (unsigned i = 0; i < config->ports.size(); ++i) {
    absl::StatusOr<rocemu::nic::RnicConfig> rc =
        rocemu::emulator::MakeRnicConfig(*config, i, {0x02, 0, 0, 0, 0, 1});
    if (!rc.ok()) {
      std::fprintf(stderr, "rocemud: %s:0:0: ports[%u]: %s\n", path.c_str(), i,
                   std::string(rc.status().message()).c_str());
      return 2;
    }
  }
  if (absl::GetFlag(FLAGS_check_config)) {
    std::printf("rocemud: %s: OK, %zu port(s)\n", path.c_str(),
                config->ports.size());
    return 0;
  }

  rocemu::emulator::Logger& log = rocemu::emulator::Logger::Get();
  log.set_level(config->logging.level);
  if (absl::Status s = log.Open(config->logging.file); !s.ok()) {
    std::fprintf(stderr, "rocemud: logging.file: %s\n",
                 std::string(s.message()).c_str());
    return 2;
  }
  InstallSignals();

  // Startup errors must reach the operator's terminal even when the log
  // goes to a file.
  const bool log_to_file = !config->logging.file.empty();
  rocemu::emulator::Daemon daemon(std::move(*config));
  if (absl::Status s = daemon.Init(); !s.ok()) {
    ROCEMU_LOG_ERROR("startup failed: %s", std::string(s.message()));
    if (log_to_file) {
      std::fprintf(stderr, "rocemud: startup failed: %s\n",
                   std::string(s.message()).c_str());
    }
    return 1;
  }
  if (absl::Status s = daemon.AttachRnics(); !s.ok()) {
    ROCEMU_LOG_ERROR("startup failed: %s", std::string(s.message()));
    if (log_to_file) {
      std::fprintf(stderr, "rocemud: startup failed: %s\n",
                   std::string(s.message()).c_str());
    }
    return 1;
  }
  // TODO(issue 5): replay mode (pcap in -> endpoint with virtual time from
  // the capture's timestamps, endpoint output -> pcap) drives the same
  // endpoint with a nic::ManualClock instead of the ports; see
  // emulator/replay/.
  daemon.Run(&g_signals);
  ROCEMU_LOG_INFO("stopped");
  return 0;
}
