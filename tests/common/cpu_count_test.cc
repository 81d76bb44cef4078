#include "tunefleet/common/cpu_count.h"

#include <sched.h>

#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "tests/support/scratch_dir.h"

namespace tunefleet {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text;
}

TEST(CpuCount, CgroupV2TakesTheSmallestQuotaOfTheCgroupAndItsAncestorsRoundedUp) {
  testing::ScratchDir dir;
  const fs::path root = dir.Path();
  Write(root / "proc/self/cgroup", "0::/kubepods/pod1/ctr\n");
  Write(root / "sys/fs/cgroup/kubepods/pod1/ctr/cpu.max", "max 100000\n");
  Write(root / "sys/fs/cgroup/kubepods/pod1/cpu.max", "250000 100000\n");  // 2.5 CPUs
  Write(root / "sys/fs/cgroup/kubepods/cpu.max", "800000 100000\n");
  EXPECT_EQ(CgroupCpuQuota(root), 3);
  Write(root / "sys/fs/cgroup/kubepods/cpu.max", "150000 100000\n");
  EXPECT_EQ(CgroupCpuQuota(root), 2);
  Write(root / "sys/fs/cgroup/kubepods/cpu.max", "20000 100000\n");  // a fifth of a CPU is still one
  EXPECT_EQ(CgroupCpuQuota(root), 1);
}

TEST(CpuCount, NoQuotaAnywhereIsNone) {
  testing::ScratchDir dir;
  const fs::path root = dir.Path();
  EXPECT_EQ(CgroupCpuQuota(root), std::nullopt);  // no /proc/self/cgroup at all
  Write(root / "proc/self/cgroup", "0::/user.slice\n");
  Write(root / "sys/fs/cgroup/user.slice/cpu.max", "max 100000\n");
  EXPECT_EQ(CgroupCpuQuota(root), std::nullopt);
  Write(root / "sys/fs/cgroup/user.slice/cpu.max", "garbage\n");
  EXPECT_EQ(CgroupCpuQuota(root), std::nullopt);
}

// A container without its own cgroup namespace sees the host's path in /proc/self/cgroup
// but has its own cgroup mounted at /sys/fs/cgroup: the mount's quota still counts.
TEST(CpuCount, APathTheMountDoesNotHoldFallsBackToTheMountItself) {
  testing::ScratchDir dir;
  const fs::path root = dir.Path();
  Write(root / "proc/self/cgroup", "0::/system.slice/docker-abc.scope\n");
  Write(root / "sys/fs/cgroup/cpu.max", "400000 100000\n");
  EXPECT_EQ(CgroupCpuQuota(root), 4);
}

TEST(CpuCount, CgroupV1ReadsTheCfsQuotaOfTheCpuController) {
  testing::ScratchDir dir;
  const fs::path root = dir.Path();
  Write(root / "proc/self/cgroup", "5:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/\n");
  Write(root / "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "300000\n");
  Write(root / "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
  Write(root / "sys/fs/cgroup/memory/docker/abc/cpu.cfs_quota_us", "100000\n");  // not the cpu controller's
  Write(root / "sys/fs/cgroup/memory/docker/abc/cpu.cfs_period_us", "100000\n");
  EXPECT_EQ(CgroupCpuQuota(root), 3);
  Write(root / "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "-1\n");
  EXPECT_EQ(CgroupCpuQuota(root), std::nullopt);
}

// The affinity mask counts, where hardware_concurrency() would not: pinned to one CPU,
// this thread may use one.
TEST(CpuCount, AffinityCountsTheCpusThisThreadMayRunOn) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  if (CPU_COUNT(&saved) < 2) GTEST_SKIP() << "needs 2 CPUs to pin to one of them";
  EXPECT_EQ(AffinityCpus(), CPU_COUNT(&saved));
  int first = 0;
  while (!CPU_ISSET(first, &saved)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  const int pinned = AffinityCpus(), usable = UsableCpus();
  ASSERT_EQ(sched_setaffinity(0, sizeof saved, &saved), 0);
  EXPECT_EQ(pinned, 1);
  EXPECT_EQ(usable, 1);
  EXPECT_GE(UsableCpus(), 1);
  EXPECT_LE(UsableCpus(), static_cast<int>(std::thread::hardware_concurrency()));
}

}  // namespace
}  // namespace tunefleet
