#include "verbs/tools/perf_options.h"

#include <getopt.h>

#include <cstdlib>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace rocemu::verbs::perf {
namespace {

constexpr uint64_t kMaxSize = uint64_t{1} << 30;

// Sizes accept a K/M/G suffix (binary, as perftest's -s does not, but
// scripts find it handy).
bool ParseSize(const char* s, uint64_t* out) {
  std::string str(s);
  uint64_t mult = 1;
  if (!str.empty()) {
    switch (str.back()) {
      case 'k':
      case 'K':
        mult = 1 << 10;
        break;
      case 'm':
      case 'M':
        mult = 1 << 20;
        break;
      case 'g':
      case 'G':
        mult = 1 << 30;
        break;
      default:
        break;
    }
    if (mult != 1) str.pop_back();
  }
  uint64_t v = 0;
  if (!absl::SimpleAtoi(str, &v)) return false;
  *out = v * mult;
  return true;
}

bool ParseTest(const std::string& name, PerfOptions* o) {
  static constexpr struct {
    const char* name;
    Verb verb;
    Mode mode;
  } kTests[] = {
      {"write_bw", Verb::kWrite, Mode::kBw},
      {"write_lat", Verb::kWrite, Mode::kLat},
      {"read_bw", Verb::kRead, Mode::kBw},
      {"read_lat", Verb::kRead, Mode::kLat},
      {"send_bw", Verb::kSend, Mode::kBw},
      {"send_lat", Verb::kSend, Mode::kLat},
      {"atomic_bw", Verb::kAtomic, Mode::kBw},
      {"atomic_lat", Verb::kAtomic, Mode::kLat},
  };
  for (const auto& t : kTests) {
    if (name == t.name) {
      o->verb = t.verb;
      o->mode = t.mode;
      return true;
    }
  }
  return false;
}

enum LongOnly {
  kOptVerify = 1000,
  kOptMemory,
  kOptJson,
  kOptSeed,
  kOptTimeout,
  kOptYield,
};

}  // namespace

std::string TestName(Verb verb, Mode mode) {
  const char* v = verb == Verb::kWrite  ? "write"
                  : verb == Verb::kRead ? "read"
                  : verb == Verb::kSend ? "send"
                                        : "atomic";
  return absl::StrCat(v, mode == Mode::kBw ? "_bw" : "_lat");
}

const char* AtomicOpName(AtomicOp op) {
  return op == AtomicOp::kFetchAndAdd ? "FETCH_AND_ADD" : "CMP_AND_SWAP";
}

std::string PerfUsage(const char* argv0) {
  return absl::StrCat(
      "usage: ", argv0, " TEST [options] [SERVER_IP]\n",
      "  TEST: write_bw write_lat read_bw read_lat send_bw send_lat\n"
      "        atomic_bw atomic_lat\n"
      "  without SERVER_IP: server (waits for one client)\n"
      "  -s, --size=BYTES        message size (K/M/G suffix allowed)\n"
      "  -n, --iters=N           iterations (messages) per size\n"
      "  -q, --qp=N              QPs; work is spread round-robin\n"
      "  -p, --port=PORT         TCP port of the exchange (18515)\n"
      "  -d, --ib-dev=DEV        device name (rocemu_<port>) or the\n"
      "                          daemon's verbs socket path\n"
      "  -m, --mtu=BYTES         path MTU 256..4096 (default: port's)\n"
      "  -t, --tx-depth=N        work requests in flight per QP\n"
      "  -a, --all[=MIN:MAX]     sizes 2^1..2^23, or powers of two in range\n"
      "  -A, --atomic_type=T     FETCH_AND_ADD (default) or CMP_AND_SWAP\n"
      "      --verify            check every byte / every atomic result\n"
      "      --memory=shm|malloc library buffers or malloc'd memory\n"
      "      --json              one JSON object per result line\n"
      "      --seed=N            payload pattern seed (1)\n"
      "      --timeout=SECONDS   bound on waits for the peer (30)\n"
      "      --yield             sched_yield() on an empty poll (when the\n"
      "                          daemons and tools outnumber the cores)\n");
}

absl::StatusOr<PerfOptions> ParsePerfOptions(int argc, char** argv) {
  PerfOptions o;
  if (argc < 2) return absl::InvalidArgumentError("missing TEST");
  if (!ParseTest(argv[1], &o)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown test '", argv[1], "'"));
  }
  static const option kLong[] = {
      {"size", required_argument, nullptr, 's'},
      {"iters", required_argument, nullptr, 'n'},
      {"qp", required_argument, nullptr, 'q'},
      {"port", required_argument, nullptr, 'p'},
      {"dev", required_argument, nullptr, 'd'},
      {"ib-dev", required_argument, nullptr, 'd'},
      {"mtu", required_argument, nullptr, 'm'},
      {"tx-depth", required_argument, nullptr, 't'},
      {"all", optional_argument, nullptr, 'a'},
      {"atomic_type", required_argument, nullptr, 'A'},
      {"verify", no_argument, nullptr, kOptVerify},
      {"memory", required_argument, nullptr, kOptMemory},
      {"json", no_argument, nullptr, kOptJson},
      {"seed", required_argument, nullptr, kOptSeed},
      {"timeout", required_argument, nullptr, kOptTimeout},
      {"yield", no_argument, nullptr, kOptYield},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  uint64_t size = 0;
  bool all = false;
  uint64_t all_min = 2, all_max = uint64_t{1} << 23;
  bool have_iters = false, have_depth = false;
  // getopt_long permutes argv; start after TEST.
  optind = 2;
  opterr = 0;
  int c;
  auto bad = [](const char* opt, const char* arg) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad value '", arg ? arg : "", "' for ", opt));
  };
  while ((c = getopt_long(argc, argv, ":s:n:q:p:d:m:t:a::A:h", kLong,
                          nullptr)) != -1) {
    uint64_t v = 0;
    switch (c) {
      case 's':
        if (!ParseSize(optarg, &size) || size == 0 || size > kMaxSize) {
          return bad("-s/--size", optarg);
        }
        break;
      case 'n':
        if (!absl::SimpleAtoi(optarg, &o.iters) || o.iters == 0 ||
            o.iters > (uint64_t{1} << 32)) {
          return bad("-n/--iters", optarg);
        }
        have_iters = true;
        break;
      case 'q':
        if (!absl::SimpleAtoi(optarg, &v) || v == 0 || v > 1024) {
          return bad("-q/--qp", optarg);
        }
        o.num_qps = static_cast<uint32_t>(v);
        break;
      case 'p':
        if (!absl::SimpleAtoi(optarg, &v) || v == 0 || v > 65535) {
          return bad("-p/--port", optarg);
        }
        o.tcp_port = static_cast<uint16_t>(v);
        break;
      case 'd':
        o.dev = optarg;
        break;
      case 'm':
        if (!absl::SimpleAtoi(optarg, &v) ||
            (v != 256 && v != 512 && v != 1024 && v != 2048 && v != 4096)) {
          return bad("-m/--mtu", optarg);
        }
        o.mtu = static_cast<uint32_t>(v);
        break;
      case 't':
        if (!absl::SimpleAtoi(optarg, &v) || v == 0 || v > 8192) {
          return bad("-t/--tx-depth", optarg);
        }
        o.tx_depth = static_cast<uint32_t>(v);
        have_depth = true;
        break;
      case 'a':
        all = true;
        // "-a MIN:MAX" as well as "-aMIN:MAX" / "--all=MIN:MAX".
        if (optarg == nullptr && optind < argc &&
            std::strchr(argv[optind], ':') != nullptr &&
            argv[optind][0] != '-') {
          optarg = argv[optind++];
        }
        if (optarg != nullptr) {
          std::vector<std::string> r = absl::StrSplit(optarg, ':');
          if (r.size() != 2 || !ParseSize(r[0].c_str(), &all_min) ||
              !ParseSize(r[1].c_str(), &all_max) || all_min == 0 ||
              all_max < all_min || all_max > kMaxSize) {
            return bad("-a/--all", optarg);
          }
        }
        break;
      case 'A':
        if (std::strcmp(optarg, "FETCH_AND_ADD") == 0 ||
            std::strcmp(optarg, "fetch_and_add") == 0) {
          o.atomic_op = AtomicOp::kFetchAndAdd;
        } else if (std::strcmp(optarg, "CMP_AND_SWAP") == 0 ||
                   std::strcmp(optarg, "cmp_and_swap") == 0) {
          o.atomic_op = AtomicOp::kCmpAndSwap;
        } else {
          return bad("-A/--atomic_type", optarg);
        }
        break;
      case kOptVerify:
        o.verify = true;
        break;
      case kOptMemory:
        if (std::strcmp(optarg, "shm") == 0) {
          o.memory = Memory::kShm;
        } else if (std::strcmp(optarg, "malloc") == 0) {
          o.memory = Memory::kMalloc;
        } else {
          return bad("--memory", optarg);
        }
        break;
      case kOptJson:
        o.json = true;
        break;
      case kOptSeed:
        if (!absl::SimpleAtoi(optarg, &o.seed)) return bad("--seed", optarg);
        break;
      case kOptTimeout:
        if (!absl::SimpleAtoi(optarg, &v) || v == 0 || v > 86400) {
          return bad("--timeout", optarg);
        }
        o.timeout_s = static_cast<uint32_t>(v);
        break;
      case kOptYield:
        o.yield = true;
        break;
      case 'h':
        return absl::CancelledError("help");
      case ':':
        return absl::InvalidArgumentError(
            absl::StrCat("option ", argv[optind - 1], " needs a value"));
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("unknown option ", argv[optind - 1]));
    }
  }
  if (optind < argc) o.server_ip = argv[optind++];
  if (optind < argc) {
    return absl::InvalidArgumentError(
        absl::StrCat("unexpected argument '", argv[optind], "'"));
  }
  const bool bw = o.mode == Mode::kBw;
  if (!have_iters) o.iters = bw ? 5000 : 1000;
  if (!have_depth) o.tx_depth = bw ? 128 : 1;
  if (o.verb == Verb::kAtomic) {
    // Atomics are 8 bytes on the wire whatever -s says (as perftest).
    if ((size != 0 && size != 8) || all) {
      return absl::InvalidArgumentError("atomics are 8 bytes: no -s or -a");
    }
    o.sizes = {8};
  } else if (all) {
    for (uint64_t s = all_min; s <= all_max; s *= 2) o.sizes.push_back(s);
  } else {
    o.sizes = {size != 0 ? size : (bw ? 65536 : 2)};
  }
  return o;
}

}  // namespace rocemu::verbs::perf
