// ProgressLog: a watcher reads its tasks' events in order, in pages of at most `max`, and
// is told (gap) when events it had not read left the window or came from another process.
#include "coordinator/progress_log.h"

#include <vector>

#include <gtest/gtest.h>

namespace tunefleet::coordinator {
namespace {

ProgressEvent Event(uint64_t task, ProgressKind kind) {
  ProgressEvent e;
  e.task_id = task;
  e.kind = kind;
  return e;
}

std::vector<uint64_t> Seqs(const ProgressRead& r) {
  std::vector<uint64_t> out;
  for (const auto& e : r.events) out.push_back(e.seq);
  return out;
}

TEST(ProgressLog, AWatcherReadsOnlyItsTasksEventsInOrderAndPageByPage) {
  ProgressLog log(1000, 16);
  EXPECT_EQ(log.Append(Event(7, ProgressKind::kStarted)), 1001u);
  log.Append(Event(8, ProgressKind::kStarted));
  log.Append(Event(7, ProgressKind::kImproved));
  log.Append(Event(8, ProgressKind::kFinished));
  log.Append(Event(7, ProgressKind::kFinished));

  ProgressRead all = log.Read(0, {7}, 10);
  EXPECT_EQ(Seqs(all), (std::vector<uint64_t>{1001, 1003, 1005}));
  EXPECT_EQ(all.events[1].kind, ProgressKind::kImproved);
  EXPECT_EQ(all.next, 1005u);
  EXPECT_FALSE(all.gap);

  // Two at a time: the second page starts after the last event returned, not after
  // everything looked at (task 8's events in between are skipped, not lost).
  ProgressRead page = log.Read(0, {7}, 2);
  EXPECT_EQ(Seqs(page), (std::vector<uint64_t>{1001, 1003}));
  EXPECT_TRUE(page.more) << "1005 is the task's too";
  EXPECT_FALSE(all.more);
  EXPECT_EQ(page.next, 1004u) << "task 8's 1004 was looked at and is not ours";
  ProgressRead rest = log.Read(page.next, {7}, 2);
  EXPECT_EQ(Seqs(rest), (std::vector<uint64_t>{1005}));
  EXPECT_FALSE(rest.more);
  EXPECT_EQ(rest.next, 1005u);

  // Nothing new: an empty read that keeps the position.
  ProgressRead none = log.Read(rest.next, {7}, 2);
  EXPECT_TRUE(none.events.empty());
  EXPECT_EQ(none.next, 1005u);
  EXPECT_FALSE(none.gap);
  // Another task's events move the position of a reader that does not want them.
  log.Append(Event(8, ProgressKind::kImproved));
  EXPECT_EQ(log.Read(rest.next, {7}, 2).next, 1006u);
}

TEST(ProgressLog, AReaderBehindTheWindowOrFromAnotherProcessIsToldItMissedEvents) {
  ProgressLog log(1000, 3);
  for (uint64_t task = 1; task <= 5; ++task) log.Append(Event(task, ProgressKind::kStarted));  // 1001..1005
  // 1001 and 1002 were dropped: a reader at 1001 missed 1002.
  ProgressRead behind = log.Read(1001, {1, 2, 3, 4, 5}, 10);
  EXPECT_TRUE(behind.gap);
  EXPECT_EQ(Seqs(behind), (std::vector<uint64_t>{1003, 1004, 1005}));
  // A reader at 1002 (the last dropped one) missed nothing.
  ProgressRead caught_up = log.Read(1002, {1, 2, 3, 4, 5}, 10);
  EXPECT_FALSE(caught_up.gap);
  EXPECT_EQ(caught_up.events.size(), 3u);
  // From the start (0) after drops: gap; a number above the head or below this log's
  // first is another process's: gap, read from the oldest kept.
  EXPECT_TRUE(log.Read(0, {1}, 10).gap);
  ProgressRead future = log.Read(99999, {5}, 10);
  EXPECT_TRUE(future.gap);
  EXPECT_EQ(Seqs(future), (std::vector<uint64_t>{1005}));
  EXPECT_TRUE(log.Read(500, {5}, 10).gap);

  // A fresh log read from 0 has missed nothing.
  ProgressLog fresh(2000, 3);
  fresh.Append(Event(1, ProgressKind::kStarted));
  EXPECT_FALSE(fresh.Read(0, {1}, 10).gap);
  EXPECT_EQ(fresh.Read(0, {1}, 10).events.size(), 1u);
  EXPECT_TRUE(fresh.Read(1005, {1}, 10).gap) << "an earlier process's number";
}

}  // namespace
}  // namespace tunefleet::coordinator
