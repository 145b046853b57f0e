#include "verbs/server/json_writer.h"

#include <cstdio>
#include <cstdlib>

namespace rocemu::verbs {

// Names and paths come from configs and clients, and a view must print
// whatever they hold: bytes that are not UTF-8 are replaced, not thrown on.
std::string DumpJson(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false,
                nlohmann::ordered_json::error_handler_t::replace);
}

std::string DumpJson(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

double RoundToDecimals(double v, int decimals) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return std::strtod(buf, nullptr);
}

double RoundToSignificant(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*g", digits, v);
  return std::strtod(buf, nullptr);
}

}  // namespace rocemu::verbs
