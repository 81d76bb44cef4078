#include "tunefleet/common/soc_spec.h"

#include <cassert>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "soc_builtin.h"

namespace tunefleet {

double SocSpec::CubePeakFlops() const {
  return static_cast<double>(ai_core_cnt) * cube_m_size * cube_n_size * cube_k_size * 2.0 *
         cube_freq_mhz * 1e6;
}

namespace {

std::string Trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

using IniMap = std::map<std::string, std::string>;  // "Section.key" -> value

Result<IniMap> ParseIni(std::string_view text, std::string_view source) {
  IniMap out;
  std::string section;
  std::istringstream in{std::string(text)};
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    std::string t = Trim(line);
    if (t.empty() || t[0] == '#' || t[0] == ';') continue;
    std::string where = std::string(source) + ":" + std::to_string(lineno);
    if (t.front() == '[') {
      if (t.back() != ']') return InvalidArgument(where + ": section header lacks ']'");
      section = Trim(std::string_view(t).substr(1, t.size() - 2));
      continue;
    }
    size_t eq = t.find('=');
    if (eq == std::string::npos) return InvalidArgument(where + ": expected key=value, got '" + t + "'");
    if (section.empty()) return InvalidArgument(where + ": key before any [Section]");
    std::string key = Trim(std::string_view(t).substr(0, eq));
    std::string value = Trim(std::string_view(t).substr(eq + 1));
    if (size_t hash = value.find(" #"); hash != std::string::npos) value = Trim(value.substr(0, hash));
    out[section + "." + key] = value;
  }
  return out;
}

class Reader {
 public:
  Reader(const IniMap& m, std::string_view source) : m_(m), source_(source) {}

  template <typename T>
  void Number(const char* section, const char* key, T& out) {
    if (!status_.ok()) return;
    std::string full = std::string(section) + "." + key;
    auto it = m_.find(full);
    if (it == m_.end()) {
      status_ = InvalidArgument(source_ + ": missing key '" + key + "' in section [" + section + "]");
      return;
    }
    try {
      size_t used = 0;
      double v = std::stod(it->second, &used);
      if (used != it->second.size() || !(v > 0)) throw std::invalid_argument("bad");
      out = static_cast<T>(v);
    } catch (const std::exception&) {
      status_ = InvalidArgument(source_ + ": key '" + key + "' in section [" + section +
                                "] must be a positive number, got '" + it->second + "'");
    }
  }
  void Text(const char* section, const char* key, std::string& out) {
    if (!status_.ok()) return;
    auto it = m_.find(std::string(section) + "." + key);
    if (it == m_.end() || it->second.empty()) {
      status_ = InvalidArgument(source_ + ": missing key '" + key + "' in section [" + section + "]");
      return;
    }
    out = it->second;
  }
  const Status& status() const { return status_; }

 private:
  const IniMap& m_;
  std::string source_;
  Status status_;
};

}  // namespace

Result<SocSpec> ParseSocSpec(std::string_view ini_text, std::string_view source) {
  TF_ASSIGN_OR_RETURN(IniMap m, ParseIni(ini_text, source));
  SocSpec s;
  Reader r(m, source);
  r.Text("version", "SoC_version", s.name);
  r.Number("SoCInfo", "ai_core_cnt", s.ai_core_cnt);
  r.Number("SoCInfo", "vector_core_cnt", s.vector_core_cnt);
  r.Number("SoCInfo", "l2_size", s.l2_size);
  r.Number("SoCInfo", "memory_size", s.memory_size);
  r.Number("AICoreSpec", "cube_freq", s.cube_freq_mhz);
  r.Number("AICoreSpec", "cube_m_size", s.cube_m_size);
  r.Number("AICoreSpec", "cube_n_size", s.cube_n_size);
  r.Number("AICoreSpec", "cube_k_size", s.cube_k_size);
  r.Number("AICoreSpec", "vec_calc_size", s.vec_calc_size);
  r.Number("AICoreSpec", "l0_a_size", s.l0_a_size);
  r.Number("AICoreSpec", "l0_b_size", s.l0_b_size);
  r.Number("AICoreSpec", "l0_c_size", s.l0_c_size);
  r.Number("AICoreSpec", "l1_size", s.l1_size);
  r.Number("AICoreSpec", "ub_size", s.ub_size);
  r.Number("AICoreSpec", "ubblock_size", s.ubblock_size);
  const char* kModel = "TunefleetModel";
  r.Number(kModel, "hbm_bandwidth_gbps", s.hbm_bandwidth_gbps);
  r.Number(kModel, "l2_bandwidth_gbps", s.l2_bandwidth_gbps);
  r.Number(kModel, "mte2_bytes_per_cycle", s.mte2_bytes_per_cycle);
  r.Number(kModel, "mte1_l0a_bytes_per_cycle", s.mte1_l0a_bytes_per_cycle);
  r.Number(kModel, "mte1_l0b_bytes_per_cycle", s.mte1_l0b_bytes_per_cycle);
  r.Number(kModel, "fixpipe_bytes_per_cycle", s.fixpipe_bytes_per_cycle);
  r.Number(kModel, "mte3_bytes_per_cycle", s.mte3_bytes_per_cycle);
  r.Number(kModel, "burst_overhead_bytes", s.burst_overhead_bytes);
  r.Number(kModel, "misaligned_stride_penalty", s.misaligned_stride_penalty);
  r.Number(kModel, "scalar_cycles_per_iteration", s.scalar_cycles_per_iteration);
  r.Number(kModel, "scalar_cycles_per_tile", s.scalar_cycles_per_tile);
  r.Number(kModel, "kernel_launch_us", s.kernel_launch_us);
  r.Number(kModel, "gm_latency_cycles", s.gm_latency_cycles);
  r.Number(kModel, "vector_instr_overhead_cycles", s.vector_instr_overhead_cycles);
  r.Number(kModel, "hbm_stream_efficiency", s.hbm_stream_efficiency);
  r.Number(kModel, "pcie_bandwidth_gbps", s.pcie_bandwidth_gbps);
  r.Number(kModel, "pcie_latency_us", s.pcie_latency_us);
  r.Number(kModel, "hccs_bandwidth_gbps", s.hccs_bandwidth_gbps);
  r.Number(kModel, "hccs_latency_us", s.hccs_latency_us);
  TF_RETURN_IF_ERROR(r.status());
  // CANN lists the cube's input->output dtypes in [AICoreintrinsicDtypeMap] Intrinsic_mmad
  // (f162f32, bf162f32, s82s32, ...); without the key a part is taken to have bf16.
  if (auto mmad = m.find("AICoreintrinsicDtypeMap.Intrinsic_mmad"); mmad != m.end()) {
    s.supports_bf16 = mmad->second.find("bf16") != std::string::npos;
  }
  return s;
}

Result<SocSpec> LoadSocSpecFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot read SoC spec file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseSocSpec(ss.str(), path);
}

SocCatalog SocCatalog::Builtin() {
  SocCatalog c;
  for (const BuiltinSocFile& f : BuiltinSocFiles()) {
    Result<SocSpec> spec = ParseSocSpec(f.text, f.name);
    // The builtin files are tested (soc_spec_test); a parse failure here is a bug.
    assert(spec.ok());
    if (spec.ok()) c.Add(std::move(spec).value());
  }
  return c;
}

Status SocCatalog::LoadDirectory(const std::string& dir) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) return NotFound("cannot list SoC spec directory '" + dir + "': " + ec.message());
  for (const auto& entry : it) {
    if (entry.path().extension() != ".ini") continue;
    TF_ASSIGN_OR_RETURN(SocSpec spec, LoadSocSpecFile(entry.path().string()));
    if (auto known = specs_.find(spec.name); known != specs_.end() && !(*known->second == spec)) {
      return InvalidArgument(entry.path().string() + ": SoC_version '" + spec.name +
                             "' names a SoC already known, with other values; results are filed under the SoC's "
                             "name, so give a modified part a name of its own (e.g. '" + spec.name + "-lab')");
    }
    Add(std::move(spec));
  }
  return Status::Ok();
}

void SocCatalog::Add(SocSpec spec) {
  std::string name = spec.name;
  specs_[name] = std::make_shared<const SocSpec>(std::move(spec));
}

Result<const SocSpec*> SocCatalog::Find(std::string_view name) const {
  auto it = specs_.find(name);
  if (it == specs_.end()) {
    std::string known;
    for (const auto& [n, s] : specs_) known += (known.empty() ? "" : ", ") + n;
    return NotFound("unknown SoC '" + std::string(name) + "' (known: " + known + ")");
  }
  return it->second.get();
}

std::vector<std::string> SocCatalog::Names() const {
  std::vector<std::string> out;
  for (const auto& [n, s] : specs_) out.push_back(n);
  return out;
}

}  // namespace tunefleet
