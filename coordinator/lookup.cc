#include "coordinator/lookup.h"

#include <string>

#include "coordinator/nearest.h"
#include "tunefleet/common/tuning_problem.h"

namespace tunefleet::coordinator {

Result<std::vector<LookupAnswer>> LookUp(const Store& store, const std::vector<OpKey>& keys, bool nearest,
                                         const SpaceOf& space_of, const NearestIndex* index) {
  std::optional<NearestIndex> own;
  std::vector<LookupAnswer> out;
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string which = "op " + std::to_string(i) + " (" + keys[i].Display() + ")";
    auto key = CanonicalOpKey(keys[i]);
    if (!key.ok()) return key.status().WithContext(which);
    LookupAnswer a;
    TF_ASSIGN_OR_RETURN(a.entry, store.GetKb(HashOpKey(*key)));
    if (a.entry) {
      out.push_back(std::move(a));
      continue;
    }
    auto space = space_of(*key);
    if (!space.ok()) return space.status().WithContext(which);
    if (nearest) {
      if (index == nullptr) {
        TF_ASSIGN_OR_RETURN(own, NearestIndex::Build(store));
        index = &*own;
      }
      auto fits = [&space](const KbEntry& e) {
        if (!*space) return true;
        auto c = (*space)->FromNamed(e.best_config);
        return c.ok() && (*space)->Validate(*c).ok();
      };
      TF_ASSIGN_OR_RETURN(std::vector<NearestEntry> near, index->Find(store, *key, 1, fits));
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
