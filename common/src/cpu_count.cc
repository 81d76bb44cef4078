#include "tunefleet/common/cpu_count.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace tunefleet {
namespace {

namespace fs = std::filesystem;

// A quota of `quota` microseconds each `period`, in CPUs rounded up; nullopt for none.
std::optional<int> QuotaCpus(double quota, double period) {
  if (!(quota > 0) || !(period > 0)) return std::nullopt;
  return std::max(1, static_cast<int>(std::ceil(quota / period)));
}

std::optional<int> Smaller(std::optional<int> a, std::optional<int> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

// cgroup v2: "max 100000" (no quota) or "200000 100000".
std::optional<int> ReadCpuMax(const fs::path& dir) {
  std::ifstream in(dir / "cpu.max");
  std::string quota;
  double period = 0;
  if (!(in >> quota >> period) || quota == "max") return std::nullopt;
  try {
    return QuotaCpus(std::stod(quota), period);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// cgroup v1: cpu.cfs_quota_us is -1 for no quota.
std::optional<int> ReadCfsQuota(const fs::path& dir) {
  std::ifstream quota_in(dir / "cpu.cfs_quota_us"), period_in(dir / "cpu.cfs_period_us");
  double quota = 0, period = 0;
  if (!(quota_in >> quota) || !(period_in >> period)) return std::nullopt;
  return QuotaCpus(quota, period);
}

// The quota of `path`'s cgroup and every ancestor up to the mount `base`. Inside a
// container the path may name the host's hierarchy while `base` is the container's own
// cgroup: the folders that do not exist are skipped, and `base` itself is always read.
template <typename Read>
std::optional<int> QuotaUpTo(const fs::path& base, const std::string& path, Read read) {
  std::optional<int> smallest;
  fs::path rel = fs::path(path).relative_path();
  for (;;) {
    smallest = Smaller(smallest, read(base / rel));
    if (rel.empty()) return smallest;
    rel = rel.parent_path();
  }
}

bool HasController(const std::string& list, const std::string& name) {
  std::stringstream in(list);
  for (std::string c; std::getline(in, c, ',');) {
    if (c == name) return true;
  }
  return false;
}

}  // namespace

std::optional<int> CgroupCpuQuota(const fs::path& root) {
  std::ifstream in(root / "proc/self/cgroup");
  const fs::path mounts = root / "sys/fs/cgroup";
  std::optional<int> smallest;
  // Lines are "id:controllers:path"; cgroup v2's is "0::path".
  for (std::string line; std::getline(in, line);) {
    const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string id = line.substr(0, a), controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (id == "0" && controllers.empty()) {
      smallest = Smaller(smallest, QuotaUpTo(mounts, path, ReadCpuMax));
    } else if (HasController(controllers, "cpu")) {
      for (const char* mount : {"cpu,cpuacct", "cpu"}) {
        if (!fs::is_directory(mounts / mount)) continue;
        smallest = Smaller(smallest, QuotaUpTo(mounts / mount, path, ReadCfsQuota));
        break;
      }
    }
  }
  return smallest;
}

int AffinityCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) {
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  return std::max(1, CPU_COUNT(&set));
}

int UsableCpus() {
  const int affinity = AffinityCpus();
  const std::optional<int> quota = CgroupCpuQuota();
  return quota ? std::min(affinity, *quota) : affinity;
}

}  // namespace tunefleet
