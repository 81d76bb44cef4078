#include "cli/cache_cmd.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/report.h"
#include "coordinator/kb_transfer.h"
#include "coordinator/store.h"
#include "tunefleet/common/kb_entry.h"
#include "tunefleet/common/kt_cache.h"
#include "tunefleet/common/protocol.h"

namespace tunefleet::cli {

namespace {

// The two places a cache command can work on, behind the same two calls.
struct Backend {
  std::function<Result<client::KbPage>(const std::string& after)> page;
  std::function<Result<client::KbImportView>(const std::vector<KbEntry>&, bool dry_run, bool skip_refused)> import;
};

Backend RemoteBackend(client::Client& c) {
  return {[&c](const std::string& after) { return c.ExportKb(after); },
          [&c](const std::vector<KbEntry>& entries, bool dry_run, bool skip_refused) {
            return c.ImportKb(entries, dry_run, skip_refused);
          }};
}

Backend LocalBackend(coordinator::Store& store, const SocCatalog& catalog) {
  auto page = [&store](const std::string& after) -> Result<client::KbPage> {
    TF_ASSIGN_OR_RETURN(std::vector<KbEntry> entries, store.KbPage(after, protocol::kKbPageDefault));
    client::KbPage p;
    p.done = entries.size() < protocol::kKbPageDefault;
    if (!entries.empty()) p.next = HashOpKey(entries.back().key).Bytes();
    p.entries = std::move(entries);
    return p;
  };
  auto import = [&store, &catalog](const std::vector<KbEntry>& entries, bool dry_run,
                                   bool skip_refused) -> Result<client::KbImportView> {
    // A replayed kernel's key cannot be rebuilt without its cache file: its config is
    // taken as given, as `lookup --data-dir` takes it.
    auto problem_for = [&catalog](const OpKey& key) -> Result<std::optional<coordinator::ImportCheck>> {
      if (key.soc == kReplaySoc) return std::optional<coordinator::ImportCheck>();
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
    TF_ASSIGN_OR_RETURN(client::KbPage page, b.page(after));
    for (const KbEntry& e : page.entries) fn(e);
    if (page.done || page.entries.empty()) return Status::Ok();
    after = page.next;
  }
}

int RunExport(const CacheCommands& f, const Backend& b) {
  const bool to_stdout = f.out == "-";
  // Written beside the target and renamed at the end: a failed export leaves no half file.
  const std::string tmp = to_stdout ? "" : f.out + ".part";
  std::ofstream file;
  if (!to_stdout) {
    file.open(tmp, std::ios::trunc);
    if (!file) return Fail(InvalidArgument("cannot write " + tmp + " (is the folder there and writable?)"));
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
  if (s.ok() && !out) s = Unavailable("writing " + (to_stdout ? std::string("standard output") : tmp) + " failed");
  if (!to_stdout) {
    file.close();
    std::error_code ec;
    if (s.ok()) {
      std::filesystem::rename(tmp, f.out, ec);
      if (ec) s = Unavailable("cannot rename " + tmp + " to " + f.out + ": " + ec.message());
    }
    if (!s.ok()) std::filesystem::remove(tmp, ec);
  }
  if (!s.ok()) return Fail(s);
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
  std::vector<std::string> errors;
};

Result<ParsedFile> ReadExportFile(const std::string& path) {
  std::ifstream file;
  if (path != "-") {
    file.open(path);
    if (!file) return InvalidArgument("cannot read " + path);
  }
  std::istream& in = path == "-" ? std::cin : file;
  ParsedFile parsed;
  std::string line;
  for (size_t n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      parsed.errors.push_back(fmt::format("{}:{}: not a JSON object (one entry per line, as `cache export` writes)", path, n));
      continue;
    }
    auto e = KbEntryFromJson(j);
    if (!e.ok()) {
      parsed.errors.push_back(fmt::format("{}:{}: {}", path, n, e.status().message()));
      continue;
    }
    parsed.entries.push_back(std::move(e).value());
    parsed.lines.push_back(n);
  }
  return parsed;
}

// Prints at most 20 of `lines` to stderr, then how many more there were.
void PrintSome(const std::vector<std::string>& lines) {
  constexpr size_t kShown = 20;
  for (size_t i = 0; i < lines.size() && i < kShown; ++i) fmt::print(stderr, "{}\n", lines[i]);
  if (lines.size() > kShown) fmt::print(stderr, "... and {} more\n", lines.size() - kShown);
}

int RunImport(const CacheCommands& f, const Backend& b) {
  auto parsed = ReadExportFile(f.in);
  if (!parsed.ok()) return Fail(parsed.status());
  if (!parsed->errors.empty()) {
    PrintSome(parsed->errors);
    return Fail(InvalidArgument(fmt::format("{} malformed line(s) in {}; nothing imported", parsed->errors.size(), f.in)));
  }
  const std::vector<KbEntry>& all = parsed->entries;
  // Sends the file in parts, line numbers kept for the refusals.
  auto send = [&](bool dry_run, client::KbImportView& total, std::vector<std::string>& refused) -> Status {
    for (size_t start = 0; start < all.size(); start += protocol::kKbImportMax) {
      const size_t end = std::min(all.size(), start + protocol::kKbImportMax);
      std::vector<KbEntry> part(all.begin() + static_cast<std::ptrdiff_t>(start), all.begin() + static_cast<std::ptrdiff_t>(end));
      TF_ASSIGN_OR_RETURN(client::KbImportView v, b.import(part, dry_run, f.skip_refused));
      total.added += v.added;
      total.replaced += v.replaced;
      total.kept += v.kept;
      for (auto& [index, reason] : v.refused) {
        refused.push_back(fmt::format("{}:{}: refused: {}", f.in, parsed->lines[start + index], reason));
        total.refused.emplace_back(static_cast<uint32_t>(parsed->lines[start + index]), reason);
      }
    }
    return Status::Ok();
  };
  client::KbImportView total;
  std::vector<std::string> refused;
  // Without --skip-refused, a dry run over every part first: a file is imported whole
  // or not at all, also when it takes several requests.
  if (!f.skip_refused && !f.dry_run) {
    client::KbImportView trial;
    if (Status s = send(true, trial, refused); !s.ok()) return Fail(s);
    if (!refused.empty()) {
      PrintSome(refused);
      return Fail(InvalidArgument(fmt::format(
          "{} of {} entries refused; nothing imported: fix or remove those lines, or pass --skip-refused to import "
          "the other {}",
          refused.size(), all.size(), all.size() - refused.size())));
    }
  }
  if (Status s = send(f.dry_run, total, refused); !s.ok()) return Fail(s);
  if (!refused.empty() && !f.json) PrintSome(refused);
  if (f.json) {
    nlohmann::json j{{"dry_run", f.dry_run},
                     {"added", total.added},
                     {"replaced", total.replaced},
                     {"kept", total.kept},
                     {"refused", nlohmann::json::array()}};
    for (const auto& [line, reason] : total.refused) j["refused"].push_back({{"line", line}, {"reason", reason}});
    fmt::print("{}\n", j.dump());
  } else {
    fmt::print("{}{}: {} added, {} replaced (faster than the stored entry), {} kept (the stored entry is as fast or "
               "faster){}\n",
               f.dry_run ? "dry run, nothing written: " : "imported ", f.in, total.added, total.replaced, total.kept,
               total.refused.empty() ? "" : fmt::format(", {} refused", total.refused.size()));
  }
  // A dry run that found refusals says so in its exit code, as the real import would.
  return !total.refused.empty() && !f.skip_refused ? kExitBadInput : kExitOk;
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
    if (oldest == 0 || e.timestamp_ms < oldest) oldest = e.timestamp_ms;
    newest = std::max(newest, e.timestamp_ms);
  });
  if (!s.ok()) return Fail(s);
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
  Backend backend;
  if (coordinator != nullptr) {
    backend = RemoteBackend(*coordinator);
  } else if (f.import_cmd->parsed()) {
    auto opened = coordinator::Store::Open(f.data_dir);
    if (!opened.ok()) {
      if (opened.status().code() == StatusCode::kUnavailable) {
        return Fail(opened.status().WithContext(
            "import into " + f.data_dir + " (a coordinator or `tune` has it open: import through it with --coordinator)"));
      }
      return Fail(opened.status());
    }
    store = std::move(opened).value();
    backend = LocalBackend(*store, catalog);
  } else {
    // Reads see the folder as it is now, also while a coordinator or `tune` holds it.
    auto opened = coordinator::Store::OpenReadOnly(f.data_dir);
    if (!opened.ok()) return Fail(opened.status());
    store = std::move(opened).value();
    backend = LocalBackend(*store, catalog);
  }
  if (f.export_cmd->parsed()) return RunExport(f, backend);
  if (f.import_cmd->parsed()) return RunImport(f, backend);
  return RunStats(f, backend);
}

}  // namespace tunefleet::cli
