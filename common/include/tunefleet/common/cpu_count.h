// How many CPUs this process may keep busy, for default thread counts (worker slots,
// the candidates `fuse` times at once). std::thread::hardware_concurrency() counts the
// machine's CPUs: a pod limited to 2 CPUs on a 64-core node would start 64 threads that
// the kernel then throttles. These read what the process is actually given.
#pragma once

#include <filesystem>
#include <optional>

namespace tunefleet {

// The CPU quota of the cgroups that hold this process (a container's --cpus, a
// Kubernetes pod's limits.cpu), in CPUs rounded up: the smallest over the cgroup and its
// ancestors, nullopt when none sets one. Reads cgroup v2's cpu.max and v1's
// cpu.cfs_quota_us / cpu.cfs_period_us under root/sys/fs/cgroup, for the paths in
// root/proc/self/cgroup; a file that is missing or unreadable sets no quota. `root` is
// "/" except in tests, which build a fake tree.
std::optional<int> CgroupCpuQuota(const std::filesystem::path& root = "/");

// The CPUs of the calling thread's affinity mask (taskset, a cpuset), at least 1.
int AffinityCpus();

// AffinityCpus() lowered to CgroupCpuQuota(), at least 1.
int UsableCpus();

}  // namespace tunefleet
