// JSON writing shared by the control-plane views of the session server, the
// daemon and the tools: documents are built as nlohmann::ordered_json (key
// order is what users and tests see) and serialized here, so that every JSON
// the project prints quotes strings the same way. Control path only.
#ifndef ROCEMU_VERBS_SERVER_JSON_WRITER_H_
#define ROCEMU_VERBS_SERVER_JSON_WRITER_H_

#include <nlohmann/json.hpp>
#include <string>

namespace rocemu::verbs {

// `j` on one line, nlohmann's escaping ('"', '\\' and control bytes
// escaped), bytes that are not UTF-8 as U+FFFD instead of an exception.
std::string DumpJson(const nlohmann::ordered_json& j);
std::string DumpJson(const nlohmann::json& j);

// `v` as printf's "%.*f" / "%.*g" would print it, kept a number: the
// double nearest that decimal, which nlohmann then prints in full, so a
// view shows 12.346 rather than 12.345678901234.
double RoundToDecimals(double v, int decimals);
double RoundToSignificant(double v, int digits);

}  // namespace rocemu::verbs

#endif  // ROCEMU_VERBS_SERVER_JSON_WRITER_H_
