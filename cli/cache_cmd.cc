#include "cli/cache_cmd.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/report.h"
#include "coordinator/kb_transfer.h"
#include "coordinator/store.h"
#include "tunefleet/common/json_fields.h"
#include "tunefleet/common/kb_entry.h"
#include "tunefleet/common/kt_cache.h"
#include "tunefleet/common/protocol.h"
#include "tunefleet/common/signals.h"

namespace tunefleet::cli {

namespace {

// The two places a cache command can work on, behind the same two calls; `stop` is set by
// SIGINT/SIGTERM, checked between pages and parts.
struct Backend {
  std::function<Result<client::KbPage>(const std::string& after)> page;
  std::function<Result<client::KbImportView>(const std::vector<KbEntry>&, bool dry_run, bool skip_refused)> import;
  const std::atomic<bool>* stop = nullptr;
  bool stopped() const { return stop != nullptr && stop->load(); }
};

Status Interrupted() { return Unavailable("interrupted by a signal"); }

// Fail(s), or the exit code of an interrupted command when a signal stopped it.
int FailOrInterrupted(const Status& s, const Backend& b) {
  if (!b.stopped()) return Fail(s);
  fmt::print(stderr, "tunefleet: interrupted\n");
  return kExitInterrupted;
}

Backend RemoteBackend(client::Client& c) {
  return {[&c](const std::string& after) { return c.ExportKb(after); },
          [&c](const std::vector<KbEntry>& entries, bool dry_run, bool skip_refused) {
            return c.ImportKb(entries, dry_run, skip_refused);
          }};
}

Backend LocalBackend(coordinator::Store& store, const SocCatalog& catalog, const KtCache* replay) {
  auto page = [&store](const std::string& after) -> Result<client::KbPage> {
    TF_ASSIGN_OR_RETURN(coordinator::Store::KbEntries got, store.KbPage(after, protocol::kKbPageDefault));
    client::KbPage p;
    p.done = got.entries.size() < protocol::kKbPageDefault;
    p.next = std::move(got.last_key);
    p.entries = std::move(got.entries);
    return p;
  };
  auto import = [&store, &catalog, replay](const std::vector<KbEntry>& entries, bool dry_run,
                                           bool skip_refused) -> Result<client::KbImportView> {
    auto problem_for = [&catalog, replay](const OpKey& key) -> Result<std::optional<coordinator::ImportCheck>> {
      if (key.soc == kReplaySoc) {
        // A replayed kernel's entry is checked against the times its cache measured.
        if (replay == nullptr || (!replay->kernel_name().empty() && replay->kernel_name() != key.op_type)) {
          return InvalidArgument("replayed kernel '" + key.op_type +
                                 "': give --replay-cache FILE of that kernel to check its entry against the measured "
                                 "times");
        }
        TF_ASSIGN_OR_RETURN(coordinator::ImportCheck check, coordinator::ReplayImportCheck(key, *replay));
        return std::optional<coordinator::ImportCheck>(std::move(check));
      }
      TF_ASSIGN_OR_RETURN(const SocSpec* spec, catalog.Find(key.soc));
      TF_ASSIGN_OR_RETURN(coordinator::ImportCheck check, coordinator::SimulatedImportCheck(key, *spec));
      return std::optional<coordinator::ImportCheck>(std::move(check));
    };
    TF_ASSIGN_OR_RETURN(coordinator::ImportOutcome o,
                        coordinator::ImportKb(store, entries, problem_for, dry_run, skip_refused));
    client::KbImportView v{o.added, o.replaced, o.kept, {}};
    for (auto& r : o.refused) v.refused.emplace_back(static_cast<uint32_t>(r.index), std::move(r.reason));
    return v;
  };
  return {page, import};
}

// Calls fn for every entry, page by page.
Status ForEachEntry(const Backend& b, const std::function<void(const KbEntry&)>& fn) {
  std::string after;
  for (;;) {
    if (b.stopped()) return Interrupted();
    TF_ASSIGN_OR_RETURN(client::KbPage page, b.page(after));
    for (const KbEntry& e : page.entries) fn(e);
    if (page.done || page.entries.empty()) return Status::Ok();
    after = page.next;
  }
}

int RunExport(const CacheCommands& f, const Backend& b) {
  namespace fs = std::filesystem;
  const bool to_stdout = f.out == "-";
  std::error_code ec;
  // A regular file (or a new one) is written beside itself and renamed at the end, so a
  // failed export leaves no half file; through a symlink, beside its target. Anything
  // else (a FIFO, a device) is written to directly.
  std::string target = f.out;
  bool replace = !to_stdout;
  if (!to_stdout) {
    const fs::file_status st = fs::status(f.out, ec);
    if (fs::is_directory(st)) return Fail(InvalidArgument("--out " + f.out + " is a folder; name a file in it"));
    if (fs::exists(st) && !fs::is_regular_file(st)) replace = false;
    // Follow a chain of links (also to a file not written yet) to the path they name.
    fs::path resolved = f.out;
    for (int hops = 0; hops < 40 && fs::is_symlink(fs::symlink_status(resolved, ec)); ++hops) {
      const fs::path next = fs::read_symlink(resolved, ec);
      if (ec) break;
      resolved = next.is_absolute() ? next : resolved.parent_path() / next;
    }
    target = resolved.string();
  }
  const std::string tmp = replace ? target + ".part" : "";
  std::ofstream file;
  if (!to_stdout) {
    file.open(replace ? tmp : target, std::ios::trunc);
    if (!file) {
      return Fail(InvalidArgument("cannot write " + (replace ? tmp : target) + " (is the folder there and writable?)"));
    }
  }
  std::ostream& out = to_stdout ? std::cout : file;
  uint64_t written = 0, skipped = 0;
  Status s = ForEachEntry(b, [&](const KbEntry& e) {
    if ((!f.soc.empty() && e.key.soc != f.soc) || (!f.op.empty() && e.key.op_type != f.op)) {
      ++skipped;
      return;
    }
    out << KbEntryToJson(e).dump() << '\n';
    ++written;
  });
  out.flush();
  if (s.ok() && !out) s = Unavailable("writing " + (to_stdout ? std::string("standard output") : target) + " failed");
  if (replace) {
    file.close();
    if (s.ok()) {
      fs::rename(tmp, target, ec);
      if (ec) s = Unavailable("cannot rename " + tmp + " to " + target + ": " + ec.message());
    }
    if (!s.ok()) fs::remove(tmp, ec);
  }
  if (!s.ok()) return FailOrInterrupted(s, b);
  fmt::print(stderr, "exported {} entr{}{}{}\n", written, written == 1 ? "y" : "ies",
             to_stdout ? "" : " to " + f.out,
             skipped ? fmt::format(" ({} not matching --soc/--op left out)", skipped) : "");
  return kExitOk;
}

// The entries of an export file with the line each came from; a malformed line is an
// error naming it. Every line is read, so all errors are shown at once.
struct ParsedFile {
  std::vector<KbEntry> entries;
  std::vector<size_t> lines;
  std::vector<std::pair<size_t, std::string>> errors;  // (line, what is wrong)
};

// Standard input, waited on in 100 ms polls so a signal (`stop`) is seen while nothing
// arrives: std::getline on a pipe that stays open would block past SIGINT. Its own
// buffer (no sync with C stdio) tells what is read already.
bool StdinReadable(const std::atomic<bool>* stop) {
  for (;;) {
    if (std::cin.rdbuf()->in_avail() > 0) return true;
    if (stop != nullptr && stop->load()) return false;
    pollfd p{STDIN_FILENO, POLLIN, 0};
    if (poll(&p, 1, 100) > 0) return true;  // data, or the end (POLLHUP): getline sees which
  }
}

Result<ParsedFile> ReadExportFile(const std::string& path, const std::atomic<bool>* stop) {
  std::ifstream file;
  if (path != "-") {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) return InvalidArgument(path + " is a folder; give the file `cache export` wrote");
    file.open(path);
    if (!file) return InvalidArgument("cannot read " + path);
  }
  const bool from_stdin = path == "-";
  if (from_stdin) std::ios::sync_with_stdio(false);  // before cin's first read: see StdinReadable
  std::istream& in = from_stdin ? std::cin : file;
  ParsedFile parsed;
  std::string line;
  for (size_t n = 1;; ++n) {
    if (from_stdin && !StdinReadable(stop)) return Interrupted();
    if (!std::getline(in, line)) break;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto j = ParseJson(std::string_view(line), "");
    if (!j.ok()) {
      parsed.errors.emplace_back(n, j.status().message() + (j.status().message().find("not valid JSON") != std::string::npos
                                                                ? "; one entry per line, as `cache export` writes"
                                                                : ""));
      continue;
    }
    auto e = KbEntryFromJson(*j);
    if (!e.ok()) {
      parsed.errors.emplace_back(n, e.status().message());
      continue;
    }
    parsed.entries.push_back(std::move(e).value());
    parsed.lines.push_back(n);
  }
  if (in.bad()) return Unavailable("reading " + path + " failed");
  return parsed;
}

// Prints at most 20 of `lines` (line number, what) to stderr as FILE:LINE: PREFIXwhat,
// then how many more there were.
void PrintSome(const std::string& file, const std::vector<std::pair<size_t, std::string>>& lines, const char* prefix) {
  constexpr size_t kShown = 20;
  for (size_t i = 0; i < lines.size() && i < kShown; ++i) {
    fmt::print(stderr, "{}:{}: {}{}\n", file, lines[i].first, prefix, lines[i].second);
  }
  if (lines.size() > kShown) fmt::print(stderr, "... and {} more\n", lines.size() - kShown);
}

// What an import did, for a script: also when nothing was written.
void PrintImportJson(bool dry_run, bool written, const client::KbImportView& total,
                     const std::vector<std::pair<size_t, std::string>>& refused,
                     const std::vector<std::pair<size_t, std::string>>& malformed) {
  nlohmann::json j{{"dry_run", dry_run},           {"written", written},
                   {"added", total.added},         {"replaced", total.replaced},
                   {"kept", total.kept},           {"refused", nlohmann::json::array()},
                   {"malformed", nlohmann::json::array()}};
  for (const auto& [line, reason] : refused) j["refused"].push_back({{"line", line}, {"reason", reason}});
  for (const auto& [line, reason] : malformed) j["malformed"].push_back({{"line", line}, {"reason", reason}});
  fmt::print("{}\n", j.dump());
}

int RunImport(const CacheCommands& f, const Backend& b) {
  auto parsed = ReadExportFile(f.in, b.stop);
  if (!parsed.ok()) return FailOrInterrupted(parsed.status(), b);
  if (!parsed->errors.empty()) {
    PrintSome(f.in, parsed->errors, "");
    if (f.json) PrintImportJson(f.dry_run, false, {}, {}, parsed->errors);
    return Fail(InvalidArgument(fmt::format("{} malformed line(s) in {}; nothing imported", parsed->errors.size(), f.in)));
  }
  const std::vector<KbEntry>& all = parsed->entries;
  // Sends the file in parts; refusals come back with their line numbers.
  auto send = [&](bool dry_run, client::KbImportView& total, std::vector<std::pair<size_t, std::string>>& refused) -> Status {
    for (size_t start = 0; start < all.size(); start += protocol::kKbImportMax) {
      // Between parts only: a part sent is merged whole (merging again is harmless).
      if (b.stopped()) return Interrupted();
      const size_t end = std::min(all.size(), start + protocol::kKbImportMax);
      std::vector<KbEntry> part(all.begin() + static_cast<std::ptrdiff_t>(start), all.begin() + static_cast<std::ptrdiff_t>(end));
      TF_ASSIGN_OR_RETURN(client::KbImportView v, b.import(part, dry_run, f.skip_refused));
      total.added += v.added;
      total.replaced += v.replaced;
      total.kept += v.kept;
      for (auto& [index, reason] : v.refused) refused.emplace_back(parsed->lines[start + index], reason);
    }
    return Status::Ok();
  };
  client::KbImportView total;
  std::vector<std::pair<size_t, std::string>> refused;
  // Without --skip-refused, a dry run over every part first: a file is imported whole
  // or not at all, also when it takes several requests.
  if (!f.skip_refused && !f.dry_run) {
    client::KbImportView trial;
    if (Status s = send(true, trial, refused); !s.ok()) return FailOrInterrupted(s, b);
    if (!refused.empty()) {
      PrintSome(f.in, refused, "refused: ");
      if (f.json) PrintImportJson(false, false, {}, refused, {});
      return Fail(InvalidArgument(fmt::format(
          "{} of {} entries refused; nothing imported: fix or remove those lines, or pass --skip-refused to import "
          "the other {}",
          refused.size(), all.size(), all.size() - refused.size())));
    }
  }
  if (Status s = send(f.dry_run, total, refused); !s.ok()) return FailOrInterrupted(s, b);
  if (!refused.empty()) PrintSome(f.in, refused, "refused: ");
  if (f.json) {
    PrintImportJson(f.dry_run, !f.dry_run, total, refused, {});
  } else {
    fmt::print("{}{}: {} added, {} replaced (faster than the stored entry), {} kept (the stored entry is as fast or "
               "faster){}\n",
               f.dry_run ? "dry run, nothing written: " : "imported ", f.in, total.added, total.replaced, total.kept,
               refused.empty() ? "" : fmt::format(", {} refused", refused.size()));
  }
  // A dry run that found refusals says so in its exit code, as the real import would.
  return !refused.empty() && !f.skip_refused ? kExitBadInput : kExitOk;
}

int RunStats(const CacheCommands& f, const Backend& b) {
  struct Group {
    std::vector<double> improvements;
  };
  std::map<std::pair<std::string, std::string>, Group> groups;  // (SoC, op type)
  uint64_t entries = 0, stale = 0;
  int64_t oldest = 0, newest = 0;
  Status s = ForEachEntry(b, [&](const KbEntry& e) {
    ++entries;
    if (e.key.model_version != kSimModelVersion) {
      ++stale;
      return;
    }
    groups[{e.key.soc, e.key.op_type}].improvements.push_back(e.improvement);
    if (e.timestamp_ms > 0 && (oldest == 0 || e.timestamp_ms < oldest)) oldest = e.timestamp_ms;  // 0: unknown
    newest = std::max(newest, e.timestamp_ms);
  });
  if (!s.ok()) return FailOrInterrupted(s, b);
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  if (f.json) {
    nlohmann::json j{{"entries", entries}, {"stale_entries", stale}, {"model_version", kSimModelVersion},
                     {"oldest_ms", oldest}, {"newest_ms", newest}, {"groups", nlohmann::json::array()}};
    for (const auto& [key, g] : groups) {
      j["groups"].push_back({{"soc", key.first},
                             {"op", key.second},
                             {"entries", g.improvements.size()},
                             {"median_improvement", median(g.improvements)},
                             {"best_improvement", *std::max_element(g.improvements.begin(), g.improvements.end())}});
    }
    fmt::print("{}\n", j.dump(2));
    return kExitOk;
  }
  fmt::print("knowledge base: {} entr{} of simulator model version {}", entries - stale,
             entries - stale == 1 ? "y" : "ies", kSimModelVersion);
  if (stale > 0) fmt::print(" (and {} of older versions, never served: re-tune those ops)", stale);
  fmt::print("\n");
  if (groups.empty()) return kExitOk;
  fmt::print("{:<14} {:<24} {:>8} {:>12} {:>12}\n", "SoC", "op", "entries", "median gain", "best gain");
  for (const auto& [key, g] : groups) {
    fmt::print("{:<14} {:<24} {:>8} {:>11.2f}x {:>11.2f}x\n", key.first, key.second, g.improvements.size(),
               median(g.improvements), *std::max_element(g.improvements.begin(), g.improvements.end()));
  }
  return kExitOk;
}

}  // namespace

void AddCacheCommands(CLI::App& app, CacheCommands& f) {
  f.cache = app.add_subcommand("cache", "the knowledge base as JSON lines: export, import (merge, the faster entry per key wins), stats");
  f.cache->require_subcommand(1);
  f.export_cmd = f.cache->add_subcommand("export", "write every knowledge-base entry as one JSON line");
  f.export_cmd->add_option("--out", f.out, "file to write ('-': standard output)")->capture_default_str();
  f.export_cmd->add_option("--soc", f.soc, "only entries of this SoC");
  f.export_cmd->add_option("--op", f.op, "only entries of this op type");
  f.import_cmd = f.cache->add_subcommand(
      "import", "merge the entries of an export file into the knowledge base, keeping the faster one per op; each is "
                "checked against this build first (model version, op, config)");
  f.import_cmd->add_option("FILE", f.in, "JSON lines from `cache export` ('-': standard input)")->required();
  f.import_cmd->add_flag("--dry-run", f.dry_run, "count what would be added, replaced and kept; write nothing");
  f.import_cmd->add_flag("--skip-refused", f.skip_refused,
                         "import the entries that pass even when others are refused (default: all or nothing)");
  f.import_cmd->add_flag("--json", f.json, "print the outcome as JSON");
  f.import_cmd->add_option("--replay-cache", f.replay_cache,
                           "with --data-dir: the Kernel Tuner cache (.json or .json.gz) to check replayed kernels' "
                           "entries against (a coordinator uses its own)")
      ->check(CLI::ExistingFile);
  f.stats_cmd = f.cache->add_subcommand("stats", "entries per SoC and op type, with their median and best improvement");
  f.stats_cmd->add_flag("--json", f.json, "print JSON");
  for (CLI::App* cmd : CoordinatorCommands(f)) {
    cmd->add_option("--data-dir", f.data_dir,
                    "work on this knowledge-base folder (what `tune` wrote) instead of a coordinator")
        ->check(CLI::ExistingDirectory);
  }
}

std::vector<CLI::App*> CoordinatorCommands(const CacheCommands& f) { return {f.export_cmd, f.import_cmd, f.stats_cmd}; }

bool CacheParsed(const CacheCommands& f) { return f.cache != nullptr && f.cache->parsed(); }
bool CacheIsLocal(const CacheCommands& f) { return CacheParsed(f) && !f.data_dir.empty(); }

int RunCacheCommand(const CacheCommands& f, const SocCatalog& catalog, client::Client* coordinator) {
  std::unique_ptr<coordinator::Store> store;
  std::optional<KtCache> replay;
  Backend backend;
  // An empty folder (--data-dir must exist): a dry run compares with an empty knowledge
  // base (made in a scratch folder), and a refused import leaves the folder empty.
  std::error_code ec;
  const bool fresh = coordinator == nullptr && std::filesystem::is_empty(f.data_dir, ec);
  std::optional<std::filesystem::path> scratch;
  struct Cleanup {
    std::function<void()> run;
    ~Cleanup() { run(); }
  } cleanup{[&] {
    store.reset();
    if (scratch) std::filesystem::remove_all(*scratch, ec);
  }};
  if (coordinator != nullptr) {
    backend = RemoteBackend(*coordinator);
  } else {
    // A dry run and the reads see the folder as it is now, also while a coordinator or
    // `tune` holds it; a real import needs it to itself.
    const bool writes = f.import_cmd->parsed() && !f.dry_run;
    if (writes && !coordinator::Store::IsEmptyOrDatabase(f.data_dir)) {
      return Fail(InvalidArgument(f.data_dir + " holds files but no knowledge base: import into an empty folder or "
                                  "one `tunefleet tune` or a coordinator wrote"));
    }
    const bool dry_run_on_nothing = f.import_cmd->parsed() && f.dry_run && fresh;
    if (dry_run_on_nothing) {
      scratch = std::filesystem::temp_directory_path() /
                fmt::format("tunefleet-dry-run-{}-{}", getpid(), std::chrono::steady_clock::now().time_since_epoch().count());
    }
    auto opened = dry_run_on_nothing ? coordinator::Store::Open(scratch->string())
                  : writes           ? coordinator::Store::Open(f.data_dir)
                                     : coordinator::Store::OpenReadOnly(f.data_dir);
    if (!opened.ok()) {
      if (writes && opened.status().code() == StatusCode::kUnavailable) {
        return Fail(opened.status().WithContext(
            "import into " + f.data_dir + " (a coordinator or `tune` has it open: import through it with --coordinator)"));
      }
      if (!writes && opened.status().code() == StatusCode::kNotFound) {
        return Fail(NotFound(f.data_dir + " holds no knowledge base yet (`tunefleet tune --data-dir` or a real import "
                             "makes one)"));
      }
      return Fail(opened.status());
    }
    store = std::move(opened).value();
    if (!f.replay_cache.empty()) {
      auto loaded = KtCache::Load(f.replay_cache);
      if (!loaded.ok()) return Fail(loaded.status());
      replay.emplace(std::move(loaded).value());
    }
    backend = LocalBackend(*store, catalog, replay ? &*replay : nullptr);
  }
  std::atomic<bool> stop{false};
  TerminationWatcher watcher([&stop] { stop = true; });
  backend.stop = &stop;
  if (f.export_cmd->parsed()) return RunExport(f, backend);
  if (f.import_cmd->parsed()) {
    const int rc = RunImport(f, backend);
    auto nothing_written = [&] {
      auto page = store->KbPage("", 1);
      return page.ok() && page->entries.empty();
    };
    if (rc != kExitOk && fresh && !f.dry_run && store != nullptr && nothing_written()) {
      // Refused whole: no empty RocksDB left behind in a folder that had none.
      store.reset();
      for (const auto& e : std::filesystem::directory_iterator(f.data_dir, ec)) std::filesystem::remove_all(e.path(), ec);
    }
    return rc;
  }
  return RunStats(f, backend);
}

}  // namespace tunefleet::cli
