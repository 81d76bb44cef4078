# Types shared by the wire protocol and the stored records.
# Versioned by evolution: fields are only ever added, never renumbered or removed.
@0xe42b79cfd1ecbdb7;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("tunefleet::schema");

struct TensorDesc {
  shape @0 :List(Int64);
  dtype @1 :Text;      # "float16", "bfloat16", "float32", "int8"
  format @2 :Text;     # "ND", "FRACTAL_NZ"
}

struct Attr {
  name @0 :Text;
  value @1 :Text;
}

# The identity of one tuning problem anywhere in the fleet (DESIGN.md "Op key").
struct OpKey {
  soc @0 :Text;
  opType @1 :Text;
  inputs @2 :List(TensorDesc);
  attrs @3 :List(Attr);          # sorted by name in canonical form
  modelVersion @4 :UInt32;
}

struct ParamValue {
  name @0 :Text;
  value @1 :Int64;
}

# Status codes mirror tunefleet::StatusCode (common/status.h).
enum StatusCode {
  ok @0;
  invalidArgument @1;
  notFound @2;
  unavailable @3;
  failedPrecondition @4;
  internal @5;
  alreadyExists @6;
  deadlineExceeded @7;
  resourceExhausted @8;
  permissionDenied @9;
}
