// Test helpers for multi-process tests: Process starts a real binary with its stdout
// on a pipe (to read its ready line), can SIGTERM or SIGKILL it, and always reaps it;
// HttpGet scrapes a real HTTP endpoint on 127.0.0.1. Owned by the test that made them.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace tunefleet::testing {

class Process {
 public:
  // Starts argv[0] with argv; stderr goes to the test's stderr.
  explicit Process(std::vector<std::string> argv);
  ~Process();  // SIGKILLs and reaps if still running
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  // Reads stdout until a line containing `needle` arrives; nullopt on EOF or timeout.
  std::optional<std::string> WaitForLine(const std::string& needle, std::chrono::milliseconds timeout);
  // Everything read from stdout so far plus the rest until EOF (bounded by timeout).
  std::string ReadAll(std::chrono::milliseconds timeout);

  void Terminate();  // SIGTERM
  void Kill();       // SIGKILL
  // Waits for exit; returns the exit code (128+signal when killed) or -1 on timeout.
  int Wait(std::chrono::milliseconds timeout);
  int pid() const { return pid_; }

 private:
  int pid_ = -1;
  int out_fd_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  std::string buffer_;
};

// "key=value" from a line like "tunefleet-coordinator ready client=... worker=...".
std::string Field(const std::string& line, const std::string& key);

// GET http://127.0.0.1:port/path; the body, or "" on failure.
std::string HttpGet(int port, const std::string& path);

// Value of an unlabelled metric sample in Prometheus text format; -1 when absent.
double MetricValue(const std::string& exposition, const std::string& name);

// Path of a built binary, from the TUNEFLEET_BIN_DIR compile definition.
std::string Binary(const std::string& relative);

}  // namespace tunefleet::testing
