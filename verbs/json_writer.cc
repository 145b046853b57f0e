#include "verbs/json_writer.h"

#include "absl/strings/str_format.h"

namespace rocemu::verbs {

void AppendJsonString(std::string_view s, std::string* out) {
  out->push_back('"');
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(ch);
    } else if (c < 0x20) {
      absl::StrAppendFormat(out, "\\u%04x", c);
    } else {
      out->push_back(ch);
    }
  }
  out->push_back('"');
}

JsonList::JsonList(std::string* out, const char* name) : out_(out) {
  absl::StrAppendFormat(out_, "\"%s\":[", name);
}

}  // namespace rocemu::verbs
