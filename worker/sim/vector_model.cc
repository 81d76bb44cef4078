#include "worker/sim/vector_model.h"

#include "worker/sim/vector_model_impl.h"
#include "worker/sim/vector_recurrence.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

namespace tunefleet::sim {
namespace {

constexpr int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr int64_t RoundUp(int64_t a, int64_t b) { return CeilDiv(a, b) * b; }

// NPU_MODEL.md "Pipes and timing": one vector instruction streams at most 255 repeats
// of 256 B each.
constexpr int64_t kRepeatBytes = 256;
constexpr int64_t kMaxRepeats = 255;

// Vector instructions per element of the op's own arithmetic, written as the Da Vinci
// vector unit's basic instructions (vadd, vmul, vmuls, vadds, vexp, vrec, vdiv, vmax,
// vconv), the way CANN's kernels decompose them:
//   Add/Sub/Mul/Div/Relu/Exp: one (vadd, vsub, vmul, vdiv, vrelu, vexp).
//   Sigmoid = 1/(1+exp(-x)): vmuls, vexp, vadds, vrec = 4. Silu = x * sigmoid(x): 4 + vmul = 5.
//   Tanh = (e^2x - 1)/(e^2x + 1): vmuls, vexp, vadds, vadds, vdiv = 5.
//   Gelu, CANN's tanh form x / (1 + exp(-1.5958 (x + 0.044715 x^3))): vmul, vmul,
//     vmuls, vadd, vmuls, vexp, vadds, vdiv = 8.
//   HardSigmoid = max(0, min(1, alpha x + beta)): vmuls, vadds, vmins, vmaxs = 4.
//     HardSwish = x * hardsigmoid(x): 4 + vmul = 5.
//   Sin, Cos: a range reduction to [-pi/2, pi/2] (vmuls by 1/pi, a round through vconv,
//     vmuls by pi, vsub = 4, Cos adding pi/2 first: 5), then the odd polynomial of degree 9
//     by Horner's rule in x^2 (vmul for x^2, 4 vmuls-and-vadds pairs, a final vmul = 10),
//     and the sign of the half period (vmul = 1): Sin 15, Cos 16.
//   FusedMulAdd: vmul, vadd = 2. Rope, per half row: vmul x by cos, vmul the other half
//     by sin, vsub (first half) or vadd (second) = 3. Where: vcmp (the condition into a
//     select mask), vsel = 2. Concat, Gather: none (copies through UB). MaxPool: one vmax per
//     element of the window (kh*kw), reading x's strided rows in UB. Clip: vmaxs, vmins = 2.
//   AveragePool: a vadd per window element and a vmuls by 1/count = kh*kw + 1 (kh*kw
//     with divisor_override 1, a sum pool).
//   DepthwiseConv2D: a vmla (multiply-accumulate by the channel's filter value) per
//     window element, and a vadd of the bias when it has one = kh*kw (+ 1), plus its
//     epilogue's ops' (a Clip's 2).
//   Cast: one vconv (two via fp32 for fp16<->bf16).
//   Softmax (row fits UB): running vmax, vsub, vexp, running vadd, vmul by 1/sum = 5.
//   LayerNorm (row fits UB): vadd (sum), vsub mean, vmul (square), vadd (sum), vmul
//     rstd, vmul gamma, vadd beta = 7.
//   RmsNorm (row fits UB): vmul (square), vadd (sum), vmul rstd, vmul gamma = 4.
//   ReduceSum/ReduceMean: one running vadd. ReduceL2: vmul (square), running vadd = 2.
//   ReduceMax/ReduceMin: one running vmax or vmin.
//   LeakyRelu = max(x, alpha x): vmuls, vmax = 2. Elu: vexp, vadds -1, vmuls alpha, vcmp
//     of x with 0, vsel = 5. Softplus = ln(1 + exp(x)): vexp, vadds, vln = 3. Abs: vabs = 1.
//     Log: vln = 1. Max, Min: vmax, vmin = 1. PRelu: vmul by the slope, vcmp, vsel = 3.
//   Equal: vcmp into a mask, vsel of 1 or 0 = 2. Not: vnot = 1 (and, as any int8 op, a
//     vconv to fp16 and one back). Add/Sub/Mul of int32 or int64: one, as of floats (an
//     int64 element is 8 bytes of the 256-byte repeat).
//   CumSum: a scan of the row, ceil(log2(cols)) vadds of it shifted by 1, 2, 4, ...
int OpInstructions(const VectorShape& s);

// Ops applied in turn to the running value in UB (a FusedElementwise chain, a depthwise
// convolution's epilogue): each op's own instructions per element.
int InstructionsOf(const std::vector<VectorOp>& ops) {
  int sum = 0;
  for (VectorOp op : ops) {
    VectorShape one;
    one.op = op;
    sum += OpInstructions(one);
  }
  return sum;
}

int OpInstructions(const VectorShape& s) {
  if (!s.chain.empty()) return InstructionsOf(s.chain);  // FusedElementwise
  switch (s.op) {
    case VectorOp::kAdd:
    case VectorOp::kSub:
    case VectorOp::kMul:
    case VectorOp::kDiv:
    case VectorOp::kRelu:
    case VectorOp::kExp:
    case VectorOp::kAbs:
    case VectorOp::kLog:
    case VectorOp::kMax:
    case VectorOp::kMin:
      return 1;
    case VectorOp::kLeakyRelu:
      return 2;
    case VectorOp::kSoftplus:
    case VectorOp::kPRelu:
      return 3;
    case VectorOp::kElu:
      return 5;
    case VectorOp::kSigmoid:
      return 4;
    case VectorOp::kSilu:
      return 5;
    case VectorOp::kHardSigmoid:
      return 4;
    case VectorOp::kHardSwish:
      return 5;
    case VectorOp::kSin:
      return 15;
    case VectorOp::kCos:
      return 16;
    case VectorOp::kTanh:
      return 5;
    case VectorOp::kGelu:
      return 8;
    case VectorOp::kFusedMulAdd:
    case VectorOp::kWhere:
    case VectorOp::kClip:
      return 2;
    case VectorOp::kRope:
      return 3;
    case VectorOp::kMaxPool:
      return s.window;
    case VectorOp::kAvgPool:
      return s.window + (s.divides ? 1 : 0);
    case VectorOp::kResize:  // nearest copies; linear blends along W, then H
      return s.window > 1 ? 6 : 0;
    case VectorOp::kPad:  // a copy; the padding's values written beside it
      return 0;
    case VectorOp::kDepthwiseConv:  // the filter is one broadcast input, a bias the other
      return s.window + (s.broadcast_inputs - 1) + InstructionsOf(s.epilogue);
    case VectorOp::kCast:
      return s.temps > 0 ? 2 : 1;
    case VectorOp::kSoftmax:
      return 5;
    case VectorOp::kLayerNorm:
      return 7 + InstructionsOf(s.epilogue);
    case VectorOp::kRmsNorm:
      return 4 + InstructionsOf(s.epilogue);
    case VectorOp::kInstanceNorm:  // vadd, vmul, vadd for the statistics; vmuls, vadds
      return 5 + InstructionsOf(s.epilogue);
    case VectorOp::kReduceSum:
    case VectorOp::kReduceMean:
    case VectorOp::kReduceMax:
    case VectorOp::kReduceMin:
      return 1;
    case VectorOp::kReduceL2:
      return 2;
    case VectorOp::kEqual:
      return 2;
    case VectorOp::kNot:
      return 1;
    case VectorOp::kCumSum: {
      int steps = 0;
      while ((int64_t{1} << steps) < s.cols) ++steps;
      return std::max(1, steps);
    }
    case VectorOp::kTranspose:
    case VectorOp::kConcat:
    case VectorOp::kGather:
      return 0;
  }
  return 0;
}

// A row that does not fit UB (NPU_MODEL.md "Softmax / LayerNorm / Reduce") is read
// twice: pass 1 gathers the statistics, pass 2 normalises and writes. Softmax pass 1 is
// the online max/sum (vmax, vsub, vexp, vadd = 4), pass 2 vsub, vexp, vmul = 3;
// LayerNorm pass 1 sums x and x^2 (vadd, vmul, vadd = 3), pass 2 vsub, vmul, vmul,
// vadd = 4; RmsNorm pass 1 sums x^2 (vmul, vadd = 2), pass 2 vmul, vmul = 2. A reduction
// accumulates chunk by chunk: one pass, never a second.
struct Passes {
  int first = 0;   // instructions per element of the statistics pass (0: none)
  int second = 0;  // instructions per element of the pass that writes
};
Passes SplitPasses(const VectorShape& s) {
  switch (s.op) {
    case VectorOp::kSoftmax:
      return {4, 3};
    case VectorOp::kLayerNorm:
      return {3, 4 + InstructionsOf(s.epilogue)};
    case VectorOp::kRmsNorm:
      return {2, 2 + InstructionsOf(s.epilogue)};
    case VectorOp::kInstanceNorm:
      return {3, 2 + InstructionsOf(s.epilogue)};
    default:
      return {0, OpInstructions(s)};
  }
}

// Per-row instructions: the tail of each reduction (vcadd of the last repeat, broadcast
// of the scalar back) and per-row scalars (1/sum, rsqrt); one repeat per row.
int PerRowInstructions(const VectorShape& s) {
  switch (s.op) {
    case VectorOp::kSoftmax:
      return 4;
    case VectorOp::kLayerNorm:
      return 6;
    case VectorOp::kRmsNorm:
      return 5;  // vcadd tail, mean, + eps, sqrt, reciprocal
    case VectorOp::kInstanceNorm: {  // LayerNorm's 6, then a = scale * rstd and b = bias - mean * a per channel
      constexpr int64_t kMaxChannels = 1 << 20;  // an int's worth; a row has at least a value per channel
      return 6 + 2 * static_cast<int>(std::min(s.row_channels, kMaxChannels));
    }
    case VectorOp::kReduceSum:
    case VectorOp::kReduceMax:  // vcmax tail, broadcast
    case VectorOp::kReduceMin:
      return 2;
    case VectorOp::kReduceMean:
    case VectorOp::kReduceL2:  // vcadd tail, broadcast, sqrt
      return 3;
    default:
      return 0;
  }
}

// Casts around the arithmetic when the vector unit computes in another dtype
// (bf16 in fp32, int8 in fp16): one vconv per input in, one out.
int CastInstructions(const VectorShape& s) {
  if (s.op == VectorOp::kCast || s.op == VectorOp::kTranspose || s.op == VectorOp::kConcat || s.op == VectorOp::kGather ||
      s.op == VectorOp::kPad || (s.op == VectorOp::kResize && s.window == 1)) {
    return 0;
  }
  if (s.compute_dtype == s.dtype) return 0;
  const int inputs = s.family == VectorFamily::kElementwise ? s.full_inputs + s.broadcast_inputs : 1;
  // One out, unless the output is in the compute dtype (an int8 depthwise convolution's
  // float16) or an epilogue's Quantize writes it (counted with the epilogue).
  const bool quantized = !s.epilogue.empty() && s.epilogue.back() == VectorOp::kCast;
  return inputs + (IsReduce(s) || s.out_dtype == s.compute_dtype || quantized ? 0 : 1);
}

// One tile kind on the busiest core: what its DMA moves and what its vector unit does.
struct TileKind {
  int64_t count = 0;
  double read_hbm_eq = 0;  // MTE2 bytes-equivalent served by HBM (bursts included)
  double read_l2_eq = 0;   // MTE2 bytes-equivalent served by L2 (broadcast inputs)
  double write_eq = 0;     // MTE3 bytes-equivalent
  int64_t mte2_instrs = 0, mte3_instrs = 0;
  double vec_cycles = 0;
  int64_t vec_instrs = 0;
};

struct VecCost {
  double cycles = 0;
  int64_t instrs = 0;
};
// `per_elem` instructions over n elements of `bytes` each, plus `small` instructions
// of `small_repeats` repeats each: per-row work issued once for all rows of a tile, one
// repeat per row (the way CANN's kernels batch row reductions with vcadd/vcmax).
VecCost VectorCost(int64_t n, int64_t bytes, int per_elem, int64_t small, int64_t small_repeats,
                   const SocSpec& soc) {
  const double repeat_cycles =
      static_cast<double>(kRepeatBytes) / (2.0 * static_cast<double>(soc.vec_calc_size));
  const int64_t repeats = CeilDiv(n * bytes, kRepeatBytes);
  const int64_t instrs_each = CeilDiv(repeats, kMaxRepeats);
  VecCost c;
  const int64_t small_each = CeilDiv(small_repeats, kMaxRepeats);
  c.instrs = per_elem * instrs_each + small * small_each;
  c.cycles = per_elem * (static_cast<double>(instrs_each) * soc.vector_instr_overhead_cycles +
                         static_cast<double>(repeats) * repeat_cycles) +
             static_cast<double>(small) * (static_cast<double>(small_each) * soc.vector_instr_overhead_cycles +
                                           static_cast<double>(small_repeats) * repeat_cycles);
  return c;
}

// Bytes-equivalent of one DMA (NPU_MODEL.md "Memory"): each contiguous burst costs
// burst_overhead_bytes more; a GM row stride off the 32-byte grid costs a fraction more.
double TransferEq(double raw, double bursts, bool misaligned, const SocSpec& soc) {
  const double eq = raw + bursts * soc.burst_overhead_bytes;
  return misaligned ? eq * (1 + soc.misaligned_stride_penalty) : eq;
}

}  // namespace

int VectorInstructionsPerElement(const VectorShape& shape) {
  return OpInstructions(shape) + CastInstructions(shape);
}

Result<KernelEstimate> EstimateVector(const VectorShape& s, const VectorTiling& t,
                                      const SocSpec& soc) {
  return EstimateVectorPlanned(s, t, soc, nullptr);
}

Result<KernelEstimate> EstimateVectorPlanned(const VectorShape& s, const VectorTiling& t,
                                             const SocSpec& soc, VectorPlan* plan_out) {
  VectorPlan local;
  VectorPlan* plan = plan_out ? plan_out : &local;
  if (t.used_cores <= 0 || (t.buffer_num != 1 && t.buffer_num != 2)) {
    return InvalidArgument("vector tiling needs usedCores > 0 and bufferNum 1 or 2");
  }
  switch (s.family) {
    case VectorFamily::kElementwise:
      if (t.tile_length <= 0 || s.elements <= 0) {
        return InvalidArgument("element-wise tileLength and element count must be positive");
      }
      break;
    case VectorFamily::kRowwise:
      if (t.rows_per_tile <= 0 || s.rows <= 0 || s.cols <= 0) {
        return InvalidArgument("row-wise rowsPerTile, rows and cols must be positive");
      }
      break;
    case VectorFamily::kTranspose:
      if (t.tile_rows <= 0 || t.tile_cols <= 0 || s.rows <= 0 || s.cols <= 0 || s.batch <= 0) {
        return InvalidArgument("Transpose tileRows, tileCols and the matrix must be positive");
      }
      break;
  }
  const VectorBlocking blk = ComputeVectorBlocking(s, t, soc);
  const int64_t cores = std::min({t.used_cores, blk.tiles, static_cast<int64_t>(soc.vector_core_cnt)});
  const int64_t per_core = CeilDiv(blk.tiles, cores);  // last-wave imbalance: the busiest core
  const int64_t in_b = DTypeBytes(s.dtype);
  const int64_t out_b = DTypeBytes(s.out_dtype);
  const int64_t c_b = DTypeBytes(s.compute_dtype);
  const int64_t align = soc.ubblock_size;
  const int casts = CastInstructions(s);

  std::array<TileKind, 2> kinds{};  // row-wise split rows alternate two kinds
  int n_kinds = 1;
  double prologue_l2_bytes = 0;     // loaded once per core before the loop (gamma/beta)
  double hbm_bytes = 0, compulsory = 0, l2_bytes = 0, element_ops = 0;

  switch (s.family) {
    case VectorFamily::kElementwise: {
      // Tiles are handed out round-robin; every tile of the busiest core counted full.
      const int64_t n = std::min(t.tile_length, s.elements);
      TileKind& k = kinds[0];
      k.count = per_core;
      // Concat reads its inputs' pieces, Gather its table's rows, Resize the input rows of its
      // output rows, each a burst: a tile of n elements in n / piece.
      const bool pieces = s.op == VectorOp::kConcat || s.op == VectorOp::kGather || s.op == VectorOp::kResize ||
                          s.op == VectorOp::kPad;
      const double bursts = pieces ? static_cast<double>(CeilDiv(n, std::max<int64_t>(1, s.cols))) : 1;
      k.read_hbm_eq = s.full_inputs * TransferEq(static_cast<double>(n * in_b), bursts, false, soc);
      // Resize and Pad: the tile's share of the input elements it reads, a burst per input row read.
      const double source_share = static_cast<double>(s.source_elements) / static_cast<double>(s.elements);
      if (s.source_elements > 0) {
        k.read_hbm_eq += TransferEq(std::ceil(static_cast<double>(n) * source_share) * static_cast<double>(in_b),
                                    bursts * std::sqrt(static_cast<double>(s.window)), false, soc);
      }
      // Gather's indices: one per row of the tile, read in one burst before the rows.
      const double index_bytes = static_cast<double>(s.index_bytes) * (s.cols > 0 ? static_cast<double>(n) / s.cols : 0);
      if (s.index_bytes > 0) k.read_hbm_eq += TransferEq(std::ceil(index_bytes), 1, false, soc);
      // A broadcast input (a bias row, a scalar) is loaded per tile at its own size, at
      // most a tile, and served by L2 after the first core read it.
      const int64_t bcast_n =
          s.broadcast_inputs > 0 ? std::min(n, CeilDiv(s.broadcast_elements, s.broadcast_inputs)) : 0;
      k.read_l2_eq = s.broadcast_inputs * TransferEq(static_cast<double>(bcast_n * in_b), 1, false, soc);
      k.write_eq = TransferEq(static_cast<double>(n * out_b), 1, false, soc);
      // A window op's share of x (its full_inputs outputs' worth) is one DMA instruction of
      // strided bursts, DataCopy's blockCount: a [128, 1] window's rows pay one latency, not 128.
      const bool windows =
          s.op == VectorOp::kMaxPool || s.op == VectorOp::kAvgPool || s.op == VectorOp::kDepthwiseConv;
      k.mte2_instrs = (windows ? 1 : s.full_inputs) + s.broadcast_inputs +
                      (s.index_bytes > 0 || s.source_elements > 0 ? 1 : 0);
      k.mte3_instrs = 1;
      const VecCost v = VectorCost(n, c_b, VectorInstructionsPerElement(s), 0, 0, soc);
      k.vec_cycles = v.cycles;
      k.vec_instrs = v.instrs;
      const double e = static_cast<double>(s.elements);
      const double bcast = static_cast<double>(s.broadcast_elements * in_b);
      compulsory = e * s.full_inputs * in_b + bcast + e * out_b +
                   (s.index_bytes > 0 ? e / static_cast<double>(s.cols) * s.index_bytes : 0) +
                   static_cast<double>(s.source_elements * in_b);
      hbm_bytes = compulsory;
      l2_bytes = std::max(0.0, static_cast<double>(blk.tiles * s.broadcast_inputs * bcast_n * in_b) - bcast);
      element_ops = e * VectorInstructionsPerElement(s);
      break;
    }
    case VectorFamily::kRowwise: {
      const bool reduce = IsReduce(s);
      const double rows = static_cast<double>(s.rows);
      const double cols = static_cast<double>(s.cols);
      const bool misaligned = (s.cols * in_b) % align != 0;
      // Rows sit in UB padded to the 32-byte grid; the vector unit works on the padding too.
      const int64_t cols_c = RoundUp(s.cols, std::max<int64_t>(1, align / c_b));
      const double param_bytes = NormParams(s) * cols * in_b;
      compulsory = rows * cols * in_b + param_bytes + rows * (reduce ? 1 : cols) * out_b;
      if (!blk.split_rows) {
        const int64_t r = std::min(t.rows_per_tile, s.rows);
        TileKind& k = kinds[0];
        k.count = per_core;
        // A tile of whole rows is one burst when rows are 32-byte aligned in GM, else one
        // padded burst per row (DataCopyPad).
        const double bursts = misaligned ? static_cast<double>(r) : 1;
        k.read_hbm_eq = TransferEq(static_cast<double>(r * s.cols * in_b), bursts, misaligned, soc);
        k.write_eq = reduce ? TransferEq(static_cast<double>(r * out_b), 1, false, soc)
                            : TransferEq(static_cast<double>(r * s.cols * out_b), bursts, misaligned, soc);
        k.mte2_instrs = 1;
        k.mte3_instrs = 1;
        const VecCost v = VectorCost(r * cols_c, c_b, OpInstructions(s) + casts, PerRowInstructions(s), r, soc);
        k.vec_cycles = v.cycles;
        k.vec_instrs = v.instrs;
        if (param_bytes > 0) prologue_l2_bytes = param_bytes;
        hbm_bytes = compulsory;
        element_ops = rows * cols * (OpInstructions(s) + casts);
      } else {
        // Each row of the busiest core's rows streams in chunks; two passes unless a
        // reduction. A normalisation's gamma (and beta) chunks come from L2 in the writing pass.
        const int64_t chunks = CeilDiv(s.cols, blk.chunk_cols);
        const int64_t cc = std::min(blk.chunk_cols, s.cols);
        const Passes passes = SplitPasses(s);
        const double chunk_in = TransferEq(static_cast<double>(cc * in_b), 1, misaligned, soc);
        const int per_chunk_small = 2;  // fold the chunk's partial statistics into the row's
        n_kinds = 0;
        if (passes.first > 0) {
          TileKind& k = kinds[static_cast<size_t>(n_kinds++)];
          k.count = per_core * chunks;
          k.read_hbm_eq = chunk_in;
          k.mte2_instrs = 1;
          const VecCost v = VectorCost(cc, c_b, passes.first + (casts > 0 ? 1 : 0), per_chunk_small, 1, soc);
          k.vec_cycles = v.cycles;
          k.vec_instrs = v.instrs;
        }
        TileKind& k = kinds[static_cast<size_t>(n_kinds++)];
        k.count = per_core * chunks;
        k.read_hbm_eq = chunk_in;
        k.mte2_instrs = 1;
        if (NormParams(s) > 0) {
          k.read_l2_eq = NormParams(s) * TransferEq(static_cast<double>(cc * in_b), 1, false, soc);
          k.mte2_instrs += NormParams(s);
        }
        // A reduction writes its one value per row after the last chunk: spread here.
        k.write_eq = reduce ? static_cast<double>(out_b + soc.burst_overhead_bytes) / static_cast<double>(chunks)
                            : TransferEq(static_cast<double>(cc * out_b), 1, misaligned, soc);
        k.mte3_instrs = 1;
        const VecCost v = VectorCost(cc, c_b, passes.second + casts,
                                     per_chunk_small + CeilDiv(PerRowInstructions(s), chunks), 1, soc);
        k.vec_cycles = v.cycles;
        k.vec_instrs = v.instrs;
        const int reads = passes.first > 0 ? 2 : 1;
        hbm_bytes = compulsory + (reads - 1) * rows * cols * in_b;
        l2_bytes = rows * NormParams(s) * cols * in_b - param_bytes;
        element_ops = rows * cols * (passes.first + (passes.first > 0 && casts > 0 ? 1 : 0) + passes.second + casts);
      }
      break;
    }
    case VectorFamily::kTranspose: {
      // Pure data movement (NPU_MODEL.md "Transpose"): MTE2 gathers tileRows rows of
      // tileCols elements, MTE3 scatters tileCols rows of tileRows elements; a tile as
      // wide as the matrix is one contiguous burst.
      const int64_t r = std::min(t.tile_rows, s.rows);
      const int64_t c = std::min(t.tile_cols, s.cols);
      const double bytes = static_cast<double>(r * c * in_b);
      const double in_bursts = c == s.cols ? 1 : static_cast<double>(r);
      const double out_bursts = r == s.rows ? 1 : static_cast<double>(c);
      TileKind& k = kinds[0];
      k.count = per_core;
      k.read_hbm_eq = TransferEq(bytes, in_bursts, (s.cols * in_b) % align != 0, soc);
      k.write_eq = TransferEq(bytes, out_bursts, (s.rows * in_b) % align != 0, soc);
      k.mte2_instrs = 1;
      k.mte3_instrs = 1;
      compulsory = 2.0 * static_cast<double>(s.batch * s.rows * s.cols * in_b);
      hbm_bytes = compulsory;
      break;
    }
  }

  // HBM is shared by the active cores (NPU_MODEL.md "Memory"): with all of them streaming,
  // each gets 1/cores of the sustained bandwidth; a core alone is limited by its own DMA.
  // Items (tiles, or rows when split) are dealt round-robin, so the first `full` cores run
  // per_core of them and the rest one fewer: while the busiest cores run their last item
  // the others are done, and those `full` cores split HBM among themselves. Over the
  // launch that is work-conserving: an HBM-bound busiest core ends at bytes / bandwidth
  // however the last wave falls, not earlier on fewer cores.
  const double cycles_per_us = soc.CyclesPerUs();  // vector cores share the AI Core clock
  const double hbm_bytes_per_cycle =
      soc.hbm_bandwidth_gbps * 1e3 * soc.hbm_stream_efficiency / cycles_per_us;
  const int64_t full = blk.tiles - cores * (per_core - 1);
  const double tau = static_cast<double>(cores) / hbm_bytes_per_cycle;
  const double tau_last = static_cast<double>(full) / hbm_bytes_per_cycle;
  const bool split = s.family == VectorFamily::kRowwise && blk.split_rows;
  // The busiest cores' tiles that run after the others are done: their last item's
  // (a split row: its chunks in every pass), which in time are the last of the last
  // kind -- the others started that pass one row earlier.
  const int64_t last_tiles = full < cores ? (split ? n_kinds * CeilDiv(s.cols, blk.chunk_cols) : 1) : 0;
  const double lat = soc.gm_latency_cycles;
  const bool ping_pong = t.buffer_num == 2;

  KernelEstimate est;
  double cycles = 0;
  // Gamma/beta: one serial load per core before the loop (they stay resident).
  if (prologue_l2_bytes > 0) {
    const double pro = lat + TransferEq(prologue_l2_bytes, 2, false, soc) / soc.mte2_bytes_per_cycle;
    cycles += pro;
    est.BusyUs(Pipe::kMte2) += pro;
    plan->prologue = pro;
  }
  bool first = true;
  // Kind k's tiles on the busiest core at a given HBM share (cycles per byte).
  auto stages = [&](const TileKind& k, double share_tau, VectorTilePlan& p) {
    const double data2 = (k.read_hbm_eq + k.read_l2_eq) / soc.mte2_bytes_per_cycle;
    const double data3 = k.write_eq / soc.mte3_bytes_per_cycle;
    p.mte2_latency = static_cast<double>(k.mte2_instrs) * lat;
    p.mte3_latency = static_cast<double>(k.mte3_instrs) * lat;
    p.scalar = soc.scalar_cycles_per_tile +
               soc.scalar_cycles_per_iteration * static_cast<double>(k.vec_instrs + k.mte2_instrs + k.mte3_instrs);
    p.vec = k.vec_cycles;
    // The cores run the same loop in lock-step, so while they all transfer each gets
    // its share of HBM; a DMA's latency is not hidden by other cores' traffic.
    p.read_hbm_cycles = k.read_hbm_eq * share_tau;
    p.write_hbm_cycles = k.write_eq * share_tau;
    p.mte2 = p.mte2_latency + std::max(data2, p.read_hbm_cycles + k.read_l2_eq / soc.mte2_bytes_per_cycle);
    p.mte3 = p.mte3_latency + std::max(data3, p.write_hbm_cycles);
  };
  for (int i = 0; i < n_kinds; ++i) {
    const TileKind& k = kinds[static_cast<size_t>(i)];
    if (k.count <= 0) continue;
    VectorTilePlan all, last;
    stages(k, tau, all);
    stages(k, tau_last, last);
    all.count = k.count;
    const int64_t kind_last = i == n_kinds - 1 ? std::min(last_tiles, k.count) : 0;
    last.count = kind_last;
    const double n_all = static_cast<double>(k.count - kind_last), n_last = static_cast<double>(kind_last);
    // Without ping-pong buffers a tile's stages run back to back; with them that is the
    // pipeline's fill and drain, once, and the steady state is the slowest stage
    // (NPU_MODEL.md "Pipes and timing") unless the core's HBM share, split by MTE2 and
    // MTE3 streaming together, is slower still. With a partial last wave the walk below
    // replaces this count, so it takes every tile at the full-wave share.
    const double n = static_cast<double>(k.count);
    const double serial = all.scalar + all.mte2 + all.vec + all.mte3;
    if (ping_pong) {
      // The pipes' bound, and the HBM share's: from the first load's first byte the
      // share must deliver every tile's bytes (MTE2 and MTE3 split it when they overlap);
      // the last write ends no earlier.
      const double steady = std::max({all.scalar, all.mte2, all.vec, all.mte3});
      const double pipes = (first ? serial - steady : 0) + n * steady;
      const double hbm =
          (first ? all.scalar + all.mte2_latency : 0) + n * (all.read_hbm_cycles + all.write_hbm_cycles);
      cycles += std::max(pipes, hbm);
    } else {
      cycles += n * serial;
    }
    first = false;
    plan->kinds[i] = all;
    plan->last[i] = last;
    est.BusyUs(Pipe::kScalar) += n_all * all.scalar + n_last * last.scalar;
    est.BusyUs(Pipe::kMte2) += n_all * all.mte2 + n_last * last.mte2;
    est.BusyUs(Pipe::kVector) += n_all * all.vec + n_last * last.vec;
    est.BusyUs(Pipe::kMte3) += n_all * all.mte3 + n_last * last.mte3;
  }
  for (double& busy : est.busy_us) busy /= cycles_per_us;

  // Whatever the pipes say, HBM has to move every byte it serves.
  const double hbm_floor_us = hbm_bytes / (soc.hbm_bandwidth_gbps * 1e3 * soc.hbm_stream_efficiency);
  plan->cores = cores;
  plan->tiles = blk.tiles;
  plan->per_core = per_core;
  plan->ping_pong = ping_pong;
  plan->split_rows = split;
  plan->chunks_per_row = plan->split_rows ? CeilDiv(s.cols, blk.chunk_cols) : 1;
  plan->n_kinds = n_kinds;
  plan->last_tiles = n_kinds > 0 ? plan->last[n_kinds - 1].count : 0;
  plan->hbm_floor_us = hbm_floor_us;

  if (plan->last_tiles > 0) {
    // A partial last wave: the busiest cores' last tiles run at a larger share, and how
    // the HBM backlog of the earlier ones carries into them is the recurrence's, not the
    // closed form's (which missed it by up to 13%). Walked tile by tile, on both kinds
    // of core, as the event simulation does: O(tiles per core).
    NoVectorRecorder none;
    cycles = std::max(WalkVectorCore(*plan, per_core, none), WalkVectorCore(*plan, per_core - 1, none));
  }
  est.duration_us = std::max(cycles / cycles_per_us, hbm_floor_us);
  est.launch_us = soc.kernel_launch_us;
  est.latency_us = est.launch_us + est.duration_us;
  est.block_dim = cores;
  est.hbm_bytes = hbm_bytes;
  est.l2_bytes = l2_bytes;
  est.compulsory_bytes = compulsory;
  // Element-ops in the compute dtype against the vector peak: vec_calc_size fp16 lanes
  // per cycle per vector core, half of them for fp32 (256 B per cycle either way).
  est.flops = element_ops;
  est.compute_roof_flops = static_cast<double>(soc.vector_core_cnt) * 2.0 * soc.vec_calc_size /
                           static_cast<double>(c_b) * cycles_per_us * 1e6;
  plan->estimate = est;
  return est;
}

}  // namespace tunefleet::sim
