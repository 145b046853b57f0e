// The daemon's YAML configuration loader on any text: it must answer a
// Config or one error line "<source>:<line>:<col>: <key>: <problem>", and
// never crash, hang or read out of bounds. Seeds: config/rocemu.yaml and
// config/examples.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<rocemu::config::Config> c =
      rocemu::config::LoadConfigString(text, "fuzz.yaml");
  if (!c.ok()) {
    const std::string m(c.status().message());
    if (m.rfind("fuzz.yaml:", 0) != 0 || m.find('\n') != std::string::npos) {
      std::fprintf(stderr, "not one located error line: %s\n", m.c_str());
      std::abort();
    }
  }
  return 0;
}
