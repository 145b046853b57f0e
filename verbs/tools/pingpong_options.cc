#include "verbs/tools/pingpong_options.h"

#include <getopt.h>

#include <cerrno>
#include <cstdlib>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace rocemu::pingpong {
namespace {

// Integers as strtol(..., 0) reads them (decimal, 0x hex, 0 octal), but
// the whole argument must be a number within [lo, hi].
absl::StatusOr<long> Number(const char* opt, const char* text, long lo,
                            long hi) {
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(text, &end, 0);
  if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi)
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid value '", text, "' for ", opt, " (want ", lo, "..", hi, ")"));
  return v;
}

constexpr int kOptVerify = 1000;
constexpr int kOptTimeout = 1001;

}  // namespace

std::string Usage(const char* argv0) {
  return absl::StrCat(
      "Usage:\n"
      "  ",
      argv0,
      " rc|ud [options]            start a server and wait for connection\n"
      "  ",
      argv0,
      " rc|ud [options] <host>     connect to server at <host>\n"
      "\n"
      "Options (as ibv_rc_pingpong / ibv_ud_pingpong):\n"
      "  -p, --port=<port>      listen on/connect to port <port> (default "
      "18515)\n"
      "  -d, --ib-dev=<dev>     use device <dev>: a daemon's device name "
      "(rocemu_<port>)\n"
      "                         or its verbs socket path (default first "
      "device found:\n"
      "                         $ROCEMU_VERBS_SOCKET, else the sockets in\n"
      "                         $ROCEMU_VERBS_DIR or /run/rocemu/)\n"
      "  -i, --ib-port=<port>   use port <port> of the device (default 1)\n"
      "  -s, --size=<size>      size of message to exchange (default rc 4096, "
      "ud 1024)\n"
      "  -m, --mtu=<size>       path MTU (default 1024; rc only)\n"
      "  -r, --rx-depth=<dep>   number of receives to post at a time (default "
      "500)\n"
      "  -n, --iters=<iters>    number of exchanges (default 1000)\n"
      "  -l, --sl=<sl>          service level value\n"
      "  -e, --events           sleep on CQ events (default poll)\n"
      "  -g, --gid-idx=<gid index> local port gid index\n"
      "  -c, --chk              validate received buffer\n"
      "  -o, --odp              rc: use malloc'd memory, registered as "
      "process\n"
      "                         memory (not pinned, reached on demand)\n"
      "  -O, --iodp, -P, --prefetch, -t, --ts, -j, --dm, -N, --new_send\n"
      "                         rc: accepted; the device reports them "
      "unsupported\n"
      "rocemu additions:\n"
      "      --verify           check every byte of every message (exit 1 on "
      "error)\n"
      "      --timeout=<sec>    give up when any wait exceeds <sec> seconds\n");
}

absl::StatusOr<Options> ParseOptions(int argc, char** argv) {
  Options o;
  if (argc < 2)
    return absl::InvalidArgumentError("missing transport: rc or ud");
  const std::string_view transport = argv[1];
  if (transport == "rc") {
    o.transport = Transport::kRc;
  } else if (transport == "ud") {
    o.transport = Transport::kUd;
    o.size = 1024;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown transport '", std::string(transport), "' (want rc or ud)"));
  }
  const bool rc = o.transport == Transport::kRc;
  static const option kLong[] = {
      {"port", required_argument, nullptr, 'p'},
      {"ib-dev", required_argument, nullptr, 'd'},
      {"ib-port", required_argument, nullptr, 'i'},
      {"size", required_argument, nullptr, 's'},
      {"mtu", required_argument, nullptr, 'm'},
      {"rx-depth", required_argument, nullptr, 'r'},
      {"iters", required_argument, nullptr, 'n'},
      {"sl", required_argument, nullptr, 'l'},
      {"events", no_argument, nullptr, 'e'},
      {"gid-idx", required_argument, nullptr, 'g'},
      {"chk", no_argument, nullptr, 'c'},
      {"odp", no_argument, nullptr, 'o'},
      {"iodp", no_argument, nullptr, 'O'},
      {"prefetch", no_argument, nullptr, 'P'},
      {"ts", no_argument, nullptr, 't'},
      {"dm", no_argument, nullptr, 'j'},
      {"new_send", no_argument, nullptr, 'N'},
      {"verify", no_argument, nullptr, kOptVerify},
      {"timeout", required_argument, nullptr, kOptTimeout},
      {nullptr, 0, nullptr, 0},
  };
  // ibv_ud_pingpong has no -m and none of the memory/API switches.
  const char* shorts = rc ? "p:d:i:s:m:r:n:l:eg:coOPtjN" : "p:d:i:s:r:n:l:eg:c";
  // getopt keeps global state: start afresh (GNU: optind 0 reinitialises),
  // without its own messages (the error is returned instead).
  optind = 0;
  opterr = 0;
  // GNU getopt permutes: options and the server name may come in any order
  // after the transport.
  int sub_argc = argc - 1;
  char** sub_argv = argv + 1;
  for (;;) {
    const int c = getopt_long(sub_argc, sub_argv, shorts, kLong, nullptr);
    if (c == -1) break;
    absl::StatusOr<long> v;
    switch (c) {
      case 'p':
        if (!(v = Number("-p", optarg, 0, 65535)).ok()) return v.status();
        o.tcp_port = static_cast<uint16_t>(*v);
        break;
      case 'd':
        o.device = optarg;
        break;
      case 'i':
        if (!(v = Number("-i", optarg, 1, 255)).ok()) return v.status();
        o.ib_port = static_cast<uint8_t>(*v);
        break;
      case 's':
        if (!(v = Number("-s", optarg, 0, 1L << 30)).ok()) return v.status();
        o.size = static_cast<uint32_t>(*v);
        break;
      case 'm':
        if (!(v = Number("-m", optarg, 256, 4096)).ok()) return v.status();
        if ((*v & (*v - 1)) != 0)
          return absl::InvalidArgumentError(
              absl::StrCat("invalid value '", optarg,
                           "' for -m (want 256, 512, 1024, 2048 or 4096)"));
        o.mtu = static_cast<uint32_t>(*v);
        break;
      case 'r':
        if (!(v = Number("-r", optarg, 1, 1 << 16)).ok()) return v.status();
        o.rx_depth = static_cast<uint32_t>(*v);
        break;
      case 'n':
        if (!(v = Number("-n", optarg, 1, 0x7FFFFFFF)).ok()) return v.status();
        o.iters = static_cast<uint32_t>(*v);
        break;
      case 'l':
        if (!(v = Number("-l", optarg, 0, 15)).ok()) return v.status();
        o.sl = static_cast<uint8_t>(*v);
        break;
      case 'e':
        o.events = true;
        break;
      case 'g':
        if (!(v = Number("-g", optarg, -1, 255)).ok()) return v.status();
        o.gid_index = static_cast<int>(*v);
        break;
      case 'c':
        o.chk = true;
        break;
      case 'o':
        o.odp = true;
        break;
      case 'O':
        o.odp = o.implicit_odp = true;
        break;
      case 'P':
        o.prefetch = true;
        break;
      case 't':
        o.timestamps = true;
        break;
      case 'j':
        o.device_memory = true;
        break;
      case 'N':
        o.new_send = true;
        break;
      case kOptVerify:
        o.verify = true;
        break;
      case kOptTimeout:
        if (!(v = Number("--timeout", optarg, 1, 86400)).ok())
          return v.status();
        o.timeout_ms = static_cast<int>(*v * 1000);
        break;
      default: {
        const std::string bad =
            optopt != 0 ? absl::StrCat("-", std::string(1, char(optopt)))
                        : std::string(sub_argv[optind - 1]);
        return absl::InvalidArgumentError(absl::StrCat(
            "unknown option or missing value: ", bad, rc ? "" : " (for ud)"));
      }
    }
  }
  while (optind < sub_argc) {
    if (!o.server.empty())
      return absl::InvalidArgumentError(
          absl::StrCat("more than one server name ('", o.server, "', '",
                       sub_argv[optind], "')"));
    o.server = sub_argv[optind++];
  }
  if (o.odp && o.device_memory)
    return absl::InvalidArgumentError("DM memory region can't be on demand");
  if (!o.odp && o.prefetch)
    return absl::InvalidArgumentError(
        "prefetch is valid only with on-demand memory region");
  return o;
}

}  // namespace rocemu::pingpong
