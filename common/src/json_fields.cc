#include "tunefleet/common/json_fields.h"

#include <cstring>

#include <nlohmann/json.hpp>

namespace tunefleet {

Status CheckKnownFields(const nlohmann::json& object, std::initializer_list<const char*> known,
                        const std::string& where) {
  if (!object.is_object()) return Status::Ok();
  for (const auto& [name, value] : object.items()) {
    if (name == "comment") continue;
    bool ok = false;
    for (const char* k : known) ok = ok || name == k;
    if (ok) continue;
    std::string list;
    for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    return InvalidArgument(where + ": unknown field '" + name + "' (known: " + list + ")");
  }
  return Status::Ok();
}

}  // namespace tunefleet
