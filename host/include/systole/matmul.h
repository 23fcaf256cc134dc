// SPDX-License-Identifier: Apache-2.0
// Matrix products for layers: the one way a layer multiplies. A layer hands
// over fp32 matrices (transposed or not), wherever they live; an executor runs the products
// on a compute unit (DeviceMatmul: operands rounded to bf16, fp32
// accumulation in the array's order) or, in tests, elsewhere. Layers never
// see buffers, descriptors or the tiler.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "systole/boards.h"
#include "systole/convolution.h"
#include "systole/device_tensor.h"
#include "systole/driver.h"
#include "systole/gemm_plan.h"
#include "systole/status.h"
#include "systole/trace.h"

namespace systole {

// An operand that a layer makes when asked instead of storing it (a
// convolution's im2col matrix, gathered from its input): all its rows,
// row-major, in fp32, or rounded to bf16 (f32_to_bf16 of the fp32 values,
// bit for bit) straight into device memory.
class OperandRows {
 public:
  virtual ~OperandRows() = default;
  virtual void fp32(float* out) const = 0;
  virtual void bf16(uint16_t* out) const = 0;
};

// Names rows an executor may keep on the card for a later call: the layer
// that makes them (`owner`), which of its parts (`part`, a convolution's
// chunk), and the tensor they are made from (`source`).
struct RowsKey {
  const void* owner = nullptr;
  const void* source = nullptr;
  uint32_t part = 0;
};

// f32_to_bf16 of `count` values (vectorised as wide as the CPU allows).
void round_to_bf16(const float* in, std::size_t count, uint16_t* out);

// C[m x n] (+)= op(A)[m x k] * op(B)[k x n] (+ bias) (ReLU), each matrix
// row-major fp32 (Operand, Destination: on the host, on the card, or
// both). op(X) is X, or X transposed when the flag is set (A is then
// stored k x m, B n x k). An operand given as rows (a_rows, b_rows) is
// made by them instead (m x k, k x n; not transposed). Only a C in the
// card's copy of the parameters' gradients accumulates on the card.
struct MatmulCall {
  uint32_t m = 0, n = 0, k = 0;
  Operand a;
  bool a_transposed = false;
  Operand b;
  bool b_transposed = false;
  const OperandRows* a_rows = nullptr;
  const OperandRows* b_rows = nullptr;
  // Elements from the start of one stored row of A (of B) to the next; 0:
  // packed (k, or m when transposed). A slice of a wider matrix sets it.
  uint32_t lda = 0, ldb = 0;
  Operand bias;  // n values, added after the last product
  bool relu = false;
  bool accumulate = false;  // C holds fp32 values that the products add to
  Destination c;
  // Made rows (a_rows or b_rows) that a later call reads again, as a
  // convolution's patches (its forward product's A is its weight
  // gradient's B): a call with rows_key makes its rows (they are new, as a
  // forward pass's) and an executor may keep them under the key where it
  // has room; a later call that sets rows_kept reads the rows kept under
  // its key (the same owner and part, made from the same source, of the
  // same shape) instead of asking for them again. The rows must still be
  // given: they are made when nothing is kept.
  RowsKey rows_key;
  bool rows_kept = false;

  uint32_t a_stride() const { return lda ? lda : a_transposed ? m : k; }
  uint32_t b_stride() const { return ldb ? ldb : b_transposed ? k : n; }
};

// The sum over a batch that a bias's or a normalisation parameter's
// gradient is: the fp32 sums of the columns of x (`rows` x `width`,
// row-major: one row per example, or per example and position, as the
// layer's product would have them), in the order of the array's K (one
// K tile per `tile` rows; NUMERICS.md, "Reductions"):
//   out[j] = ((+0 + s_0[j]) + s_1[j]) + ...,  s_t[j] = ((+0 + x[tT][j]) + x[tT + 1][j]) + ...
// each addition the vector engine's (spec::vector_sum). No operand is
// rounded to bf16. Replicas whose rows are one tile each then sum to the
// bits of one device, as their products do.
struct SumCall {
  Operand x;
  uint32_t rows = 0, width = 0;
  // How many of the products' K rows each row of x stands for: a position
  // table's gradient has one row per example, of all its positions, where
  // the layers' products have a row per position. A tile is k_tile() /
  // row_positions rows of x (at least one).
  uint32_t row_positions = 1;
  // `width` values. Sums made on the card are left in out.card (a
  // gradient of the parameters kept there, or a card tensor alone); sums
  // made on the host are written to out.host, and to out.card where no
  // host copy stands behind it.
  Destination out;

  uint32_t tile_rows(uint32_t k_tile) const {
    return k_tile ? std::max(1u, k_tile / std::max(1u, row_positions)) : 0;
  }
};

// SumCall's sums on the host, in tiles of `tile` rows (0: one tile).
void sum_rows(const float* x, uint32_t rows, uint32_t width, uint32_t tile, float* out);

// A ReLU's backward on the host: masked[i] = output[i] > 0 ? gradient[i] :
// +0 for `count` values. Both values are read whatever the comparison
// gives, so that the loop is a vector select rather than a branch that a
// random mask mispredicts half the time.
void relu_mask(const float* gradient, const float* output, std::size_t count, float* masked);

// Where an executor's time went, summed over its calls.
struct MatmulTimes {
  // Operands converted into device memory, command lists, results back.
  double staging_seconds = 0;
  // The launches: the array's products (an emulator's operand packing
  // included).
  double launch_seconds = 0;
};

class MatmulExecutor {
 public:
  virtual ~MatmulExecutor() = default;
  // Runs the calls (independent of each other) as one launch where the
  // device allows, and fills every c.
  virtual Status run(const std::vector<MatmulCall>& calls) = 0;
  Status run(const MatmulCall& call) { return run(std::vector<MatmulCall>{call}); }
  // Launches (command lists) run so far.
  virtual uint64_t launches() const = 0;
  // The K length at which long products chain through fp32 C (the device's
  // max_k); splitting K at multiples of it keeps the bits of one product.
  // 0: any split does.
  virtual uint32_t k_block() const = 0;
  // Time spent so far (zeros where the executor does not count it).
  virtual MatmulTimes times() const { return {}; }

  // The rows of a K tile: products add their K in tiles of this many and
  // sum() its rows (0: one tile, whatever the length).
  virtual uint32_t k_tile() const { return 0; }
  // The batch's sums into call.out, in tiles of k_tile() rows; on the host
  // (sum_rows) unless the executor keeps x on the card, where it sums them
  // there.
  virtual Status sum(const SumCall& call);
  // A ReLU's backward (relu_mask's bits) over `count` values: on the card
  // where all three are card tensors and the executor supports
  // kCardTensors, left there; else on the host, where all three have host
  // values. An error names a missing or stranded one.
  Status relu_mask(const Operand& gradient, const Operand& output, const Destination& masked,
                   std::size_t count);

  // What an executor does besides products and sums of host values: the
  // calls below that need a feature return kUnavailable where it is not
  // supported.
  enum class Feature {
    // Tensors on the card (allocate) that calls read and write in place of
    // host values (the card tensors of MatmulCall's and SumCall's
    // operands), and the ReLU mask over them.
    kCardTensors,
    // A convolution's input gradient summed on the card
    // (conv_input_gradient_on_card).
    kConvInputGradient,
  };
  virtual bool supports(Feature feature) const {
    (void)feature;
    return false;
  }
  // Whether a model keeps the activations that only products read on the
  // card (Activations::on_card): an executor that supports(kCardTensors)
  // and holds the model's parameters there (placement: device).
  virtual bool keeps_activations() const { return false; }
  // A tensor of `count` values on the card, for calls to write (a C, or a
  // part of it) and read (an operand; a Flatten's view of it). Its memory
  // goes with its last handle.
  virtual Result<DeviceTensor> allocate(std::size_t count);
  // The input gradient of a convolution with strides 1, for `examples`
  // images, summed on the card: dx = col2im(dy W) (convolution.h), the
  // same bits as the product and col2im on the host while W's bf16 values
  // are finite. dy (examples x out_height x out_width x filters; a card
  // tensor, a view of one, or host values) and w, the weight (filters x
  // patch), are read where the card has them; dx (examples x height x
  // width x channels) is written on the host. Only dx crosses the host
  // link, not dcol. kUnavailable where the card has no room for the work:
  // the caller then runs the product and col2im on the host.
  virtual Status conv_input_gradient_on_card(const ConvShape& shape, uint32_t examples, const Operand& dy,
                                             const Operand& w, float* dx);

 protected:
  // relu_mask's card half, over `count` values of each tensor (an
  // executor that supports kCardTensors).
  virtual Status relu_mask_on_card(const DeviceTensor& gradient, const DeviceTensor& output,
                                   const DeviceTensor& masked, std::size_t count);
};

// A model's trainable parameters kept on a card (placement: device): the
// fp32 values and their gradients, in the store's layout, as tensors in the
// unit's memory (ParameterStore::keep_on_card gives layers their parts).
struct ResidentParameters {
  DeviceTensor values, gradients;
};

// Elements [begin, end) of a region, as a sorted list of disjoint
// intervals.
class Intervals {
 public:
  void add(std::size_t begin, std::size_t end);
  bool contains(std::size_t begin, std::size_t end) const;
  // [0, count) less these intervals.
  std::vector<std::pair<std::size_t, std::size_t>> gaps(std::size_t count) const;
  void clear() { spans_.clear(); }

 private:
  std::vector<std::pair<std::size_t, std::size_t>> spans_;
};

// A buffer in one of a unit's banks that grows to the largest use
// (UnitMemory::ensure).
struct UnitSlot {
  Buffer buffer;
  uint32_t bank = 0;
};
class UnitMemory;  // one unit's memory: its buffers, tensors and bf16 copies

// Products on one compute unit of a device. Operands are rounded to bf16
// (NUMERICS.md) straight into the host views of buffers in the unit's HBM
// banks (on the emulators, mapped: device memory itself, so nothing else
// is copied), which grow to the largest call seen; tiled by plan_gemm and
// run as command lists. Where the device reaches host memory itself
// (Device::import_host: sw_emu's fast engine), a large C is the caller's
// array, which the products write (and read, accumulating) in place.
// Bias and ReLU are fused into the last K block; accumulate chains K
// through fp32 C, which gives the bits of one long product.
class DeviceMatmul final : public MatmulExecutor {
 public:
  static Result<std::unique_ptr<DeviceMatmul>> create(Device device, uint32_t unit,
                                                      std::chrono::milliseconds launch_timeout);
  ~DeviceMatmul() override;

  Status run(const std::vector<MatmulCall>& calls) override;
  using MatmulExecutor::run;
  uint64_t launches() const override { return launches_; }
  uint32_t k_block() const override { return device_.info().max_k; }
  uint32_t k_tile() const override { return device_.info().shape.rows; }
  // The kernel's performance counters summed over every launch so far.
  const spec::PerfCounters& counters() const { return counters_; }
  MatmulTimes times() const override { return times_; }
  // Calls whose C the device wrote in the caller's array (import_host).
  uint64_t results_in_place() const { return results_in_place_; }

  // Keeps `resident`'s parameters on the card from now on: an operand read
  // from a part of its values (ParameterStore::operand, card_values) comes
  // from bf16 copies the card makes with to_bf16, made again on first use
  // after values_changed(); a bias is read from the values themselves; a
  // product or a card sum into a part of its gradients stays there, and
  // may accumulate into what the host wrote there (c).
  void keep_resident(const ResidentParameters& resident);
  // The card's values changed (the optimizer ran there, or they were
  // uploaded): the bf16 copies are made again before their next use.
  void values_changed();
  // Elements of the values the card has read from its own copy so far (a
  // host layer reads the rest on the host), and of the gradients products
  // have written on the card since clear_written() (the host wrote the
  // rest).
  const Intervals& card_read() const { return card_read_; }
  const Intervals& card_written() const { return card_written_; }
  void clear_written() { card_written_.clear(); }
  // Vector-engine work on the unit (records of plan_vector's descriptors),
  // after the work queued for the next launch, in as few launches as the
  // device allows.
  Status run_vector(const std::vector<spec::CommandRecord>& work);

  // Card tensors and the convolution's input gradient on the card, where
  // the unit has a vector engine (which makes their bf16 copies and sums).
  bool supports(Feature feature) const override;
  // With the parameters kept on the card (keep_resident).
  bool keeps_activations() const override { return resident_.values && supports(Feature::kCardTensors); }
  // In the unit's C bank. Products read a card tensor through a bf16 copy
  // the card makes with to_bf16, a view (DeviceTensor's
  // blocks_transposed) a block at a time: op(X) packed over whole blocks
  // (X's rows whole blocks, or rows that split blocks evenly), or op(X) =
  // X^T where X's rows are one block's transposed rows (X stored count *
  // cols x rows: a block's columns in turn, each row of the copy a block
  // row of every block).
  Result<DeviceTensor> allocate(std::size_t count) override;
  // Runs dy's products with each kernel tap's weights over a zero-padded
  // copy of dy (tap (ky, kx) reads it ky rows and kx columns earlier, so
  // that each product's row p holds that tap's term for input pixel p),
  // and sums the products with the engine's `sum` in col2im's order. A
  // tap that reads padding adds the product of a zero row: +0 for finite
  // weights, as col2im's.
  Status conv_input_gradient_on_card(const ConvShape& shape, uint32_t examples, const Operand& dy,
                                     const Operand& w, float* dx) override;
  // Sums a card tensor on the card with the vector engine's sum opcode in
  // SumCall's order: one descriptor per K tile, one over the tiles' sums;
  // the result stays in out.card where it is given (queued at the head of
  // the next launch where out.card is part of the resident gradients),
  // else comes down. Host values are summed on the host, and so is a view
  // whose blocks read transposed (a flattened image's gradient), whose
  // rows the engine cannot read in order: its values come down first.
  Status sum(const SumCall& call) override;
  // How many tensors the card holds bf16 copies of, for products, now.
  std::size_t copied_tensors() const;
  // Bytes of made rows kept on the card (MatmulCall::rows_key).
  std::size_t kept_rows_bytes() const;

 private:
  DeviceMatmul();
  // A relu_grad descriptor, run at the head of the next launch.
  Status relu_mask_on_card(const DeviceTensor& gradient, const DeviceTensor& output,
                           const DeviceTensor& masked, std::size_t count) override;
  // Slots for calls [0, calls).
  void ensure_call_slots(std::size_t calls);
  // The device address of op(X) (rows x cols) for a product: a bf16 copy
  // the card makes of x.card when there is one (its descriptors appended
  // to `records` when the copy must be made first), else x.host rounded
  // into `slot`.
  Result<uint64_t> operand(const Operand& x, uint32_t rows, uint32_t cols, bool transposed, uint32_t stride,
                           spec::Operand which, UnitSlot& slot, std::vector<spec::CommandRecord>& records);
  // The caller's C of call `call` (`bytes` at c) as a buffer the device
  // writes itself, kept until the run ends; null where the device cannot
  // reach it or C is small.
  Buffer* import_result(std::size_t call, float* c, std::size_t bytes);
  // Runs the records as command lists; adds the launches' time.
  Status launch(const std::vector<spec::CommandRecord>& records, std::optional<TraceScope>& upload,
                double& launch_seconds);

  Device device_;
  uint32_t unit_ = 0;
  std::chrono::milliseconds timeout_{0};
  std::unique_ptr<UnitMemory> memory_;
  uint64_t launches_ = 0;
  spec::PerfCounters counters_;
  MatmulTimes times_;
  // Per call index: A, B, C (with bias behind it), and C imported from
  // the caller (none where it is staged).
  std::vector<UnitSlot> a_, b_, c_;
  std::vector<Buffer> imported_;
  bool imports_host_ = true;  // until the device says it cannot
  uint64_t results_in_place_ = 0;
  ResidentParameters resident_;  // empty tensors: none
  Intervals card_read_, card_written_;
  // Vector descriptors that run at the head of the next launch.
  std::vector<spec::CommandRecord> pending_;
  // run()'s own lists, kept so that their memory is reused: the launch's
  // records, its products, and which calls leave C on the card.
  std::vector<spec::CommandRecord> records_, products_;
  std::vector<char> on_card_;
  // conv_input_gradient_on_card's work: the zero-padded copies of dy in
  // bf16, one per padded shape (whose padding is zeroed once), the taps'
  // products and their sum.
  struct PaddedGradient {
    uint32_t padded_height = 0, padded_width = 0, out_height = 0, out_width = 0, filters = 0;
    uint32_t examples = 0;  // images whose padding is zero
    UnitSlot slot;
  };
  std::vector<PaddedGradient> padded_;
  UnitSlot tap_products_, tap_sum_;
  // sum()'s tiles' sums, and its result where it comes down; a view's
  // values come down into summed_, and host sums for a card tensor are
  // made in summed_out_.
  UnitSlot tile_sums_, sums_;
  std::vector<float> summed_, summed_out_;
};

}  // namespace systole
