#include "coordinator/lookup.h"

#include <string>

#include "coordinator/nearest.h"
#include "tunefleet/common/tuning_problem.h"

namespace tunefleet::coordinator {

Result<std::vector<LookupAnswer>> LookUp(const Store& store, const std::vector<OpKey>& keys, bool nearest,
                                         const TunableCheck& tunable) {
  std::vector<LookupAnswer> out;
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string which = "op " + std::to_string(i) + " (" + keys[i].Display() + ")";
    auto key = CanonicalOpKey(keys[i]);
    if (!key.ok()) return key.status().WithContext(which);
    LookupAnswer a;
    TF_ASSIGN_OR_RETURN(a.entry, store.GetKb(HashOpKey(*key)));
    if (!a.entry) {
      if (Status s = tunable(*key); !s.ok()) return s.WithContext(which);
    }
    if (!a.entry && nearest) {
      TF_ASSIGN_OR_RETURN(std::vector<NearestEntry> near, FindNearest(store, *key, 1));
      if (!near.empty()) {
        a.entry = std::move(near[0].entry);
        a.approximate = true;
        a.distance = near[0].distance;
      }
    }
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace tunefleet::coordinator
