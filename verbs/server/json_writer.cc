#include "verbs/server/json_writer.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"

namespace rocemu::verbs {

void AppendJsonString(std::string_view s, std::string* out) {
  // nlohmann's serializer is the project's one escaper. Bytes that are not
  // UTF-8 become U+FFFD instead of an exception: names and paths come from
  // configs and clients, and a view must print whatever they hold.
  out->append(
      nlohmann::json(std::string(s))
          .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

JsonList::JsonList(std::string* out, const char* name) : out_(out) {
  absl::StrAppendFormat(out_, "\"%s\":[", name);
}

}  // namespace rocemu::verbs
