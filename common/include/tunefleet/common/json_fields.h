// Refusing misspelt fields in the JSON files users write (ops files, model graphs): a
// field nothing reads is a typo ("dtyp" for "dtype"), and ignoring it would tune or
// profile another op than meant, with no word said.
#pragma once

#include <initializer_list>
#include <istream>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "tunefleet/common/status.h"

namespace tunefleet {

// kInvalidArgument "WHERE: unknown field 'dtyp' (known: shape, dtype, format)" for the
// first member of `object` that is not in `known`; "comment" is always allowed. Ok for a
// non-object (its own parser says what it should be).
Status CheckKnownFields(const nlohmann::json& object, std::initializer_list<const char*> known,
                        const std::string& where);

// A JSON document users wrote, or kInvalidArgument "WHERE: not valid JSON (...)" (no
// prefix for an empty `where`): also
// for a number out of double's range (1e400, which threw past a parse_error handler and
// aborted the CLI) and for a field given twice in one object (parsers keep the last one
// silently: `"op": "MatMul", "op": "Relu"` would profile a Relu).
Result<nlohmann::json> ParseJson(std::istream& in, const std::string& where);
Result<nlohmann::json> ParseJson(std::string_view text, const std::string& where);

}  // namespace tunefleet
