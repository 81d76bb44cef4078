// Refusing misspelt fields in the JSON files users write (ops files, model graphs): a
// field nothing reads is a typo ("dtyp" for "dtype"), and ignoring it would tune or
// profile another op than meant, with no word said.
#pragma once

#include <initializer_list>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "tunefleet/common/status.h"

namespace tunefleet {

// kInvalidArgument "WHERE: unknown field 'dtyp' (known: shape, dtype, format)" for the
// first member of `object` that is not in `known`; "comment" is always allowed. Ok for a
// non-object (its own parser says what it should be).
Status CheckKnownFields(const nlohmann::json& object, std::initializer_list<const char*> known,
                        const std::string& where);

}  // namespace tunefleet
