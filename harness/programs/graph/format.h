// The byte format of the graph programs (targets alloc_graph_topology and ggml_graph_topology): bytes -> a
// bounded sequence of graph-building, planning, placement and topology-mutation steps over two
// allocators, each legal in the model state where it appears (model.h) and carrying the model's
// prediction of its outcome.
//
// A program speaks about graphs abstractly (TensorSpec), not about any allocator's API: an
// AllocatorAdapter (allocator.h) turns it into calls on a concrete allocator.
//
// This decoder is a file format: tests/graph/decoder_test.cc pins it. Changing how bytes map to steps
// rewrites every file in corpus/alloc_graph_topology/, corpus/ggml_graph_topology/ and the graph
// reproducers in repro/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "layers/alloc/gallocr.h"
#include "layers/alloc/tensor.h"

namespace lifeline::graphs {

inline constexpr size_t kMaxSteps = 48;
inline constexpr int kAllocators = 2;
inline constexpr int kMaxGraphs = 4;
inline constexpr int kMaxTensorsPerGraph = 16;
inline constexpr int kMaxDim0 = 8;
inline constexpr int kMaxDim1 = 4;
inline constexpr int kMaxAlignLog2 = 6;

// One tensor of a graph, as the program describes it. Sources are indexes into the same graph.
struct TensorSpec {
  alloc::Op op = alloc::Op::kNone;
  alloc::DType type = alloc::DType::kF32;
  int64_t ne[2] = {1, 1};       // kNone leafs; other ops derive their shape
  int src[2] = {-1, -1};
  float param = 0.0f;
  bool inplace = false;
  int64_t view_offset = 0;      // kView: in elements
  bool input = false;
  bool output = false;
  bool preallocated = false;    // kNone: memory from outside the allocator
  int external_graph = -1;      // leaf view of graph `external_graph`'s tensor `external_tensor`
  int external_tensor = -1;
  // Unary, binary and copy ops that are not in place: compute on the CPU backend where the allocator under test
  // splits graphs between backends (ggml_vulkan_graph_topology: AllocatorRules::splits_cpu_marks); others
  // ignore it.
  bool cpu = false;
  // kTranspose: ggml builds it with ggml_permute (true) or ggml_transpose (false) before ggml_cont.
  bool permute = false;
  // kGetRows: row j of the result is row (rows_first + j * rows_step) % ne1 of the source, for the ne[1] rows of the
  // result (repeats when the step shares a factor with ne1, or is 0). kSetRows: row j of src[1] goes to row
  // (rows_first + j * rows_step) % ne1 of src[0], the destination (the step is coprime with ne1: no row twice).
  int rows_first = 0;
  int rows_step = 0;
  // kRope: its n_dims, mode, heads and positions (alloc::RopeParams; position of token j = pos_first + j * pos_step).
  alloc::RopeParams rope;
  // kConvDw: src[0] the kernel, src[1] the input; its stride and padding (alloc::ConvParams).
  alloc::ConvParams conv;
};

enum class StepKind : uint8_t {
  kLeaf,          // a leaf in the open graph (input / pre-allocated flags)
  kUnary,         // scale or neg of a tensor of the open graph (in place or not)
  kBinary,        // add or mul of two same-shaped tensors
  kCopy,          // copy, possibly changing the element type
  kConcat,        // concatenate two tensors with the same inner dimension
  kView,          // a 1-D view of part of a tensor, or a reshape of all of it
  kViewExternal,  // a leaf view of an output of an earlier graph (whisper's conv -> encoder)
  kMarkOutput,    // mark a tensor of the open graph as output
  kSeal,          // the open graph is complete; a new one opens
  kReserve,       // allocator k plans graph g
  kAlloc,         // allocator k places graph g, which is then computed and checked
  kRewire,        // same counts, different edges: a node of graph g takes another source
  kGrow,          // graph g gains a node (and output)
  kTogglePrealloc,  // a leaf of graph g gains or loses memory from outside
  // Added after the first release: drawn only in programs whose allocator-0 byte has bit 3 set (Program's
  // `measures`), so that every older input keeps its steps (the kinds are picked among the legal ones).
  kMeasure,       // allocator k measures graph g: the buffer sizes its reserve would need (ggml_gallocr_reserve_n_size)
  // Drawn only in programs whose allocator-0 byte has bit 4 set (Program's `row_ops`), for the same reason.
  kRowOp,         // rms_norm or soft_max of a float32 tensor of the open graph (over each row of ne0 elements)
  // Drawn only in programs whose allocator-0 byte has bit 5 set (Program's `mul_mats`).
  kMatMul,        // mul_mat of two float32 tensors of the open graph with the same ne0: [K, M] x [K, N] -> [M, N]
  // Drawn only in programs whose options byte has bit 3 set (Program's `layout_ops`).
  kTranspose,     // [ne0, ne1] -> [ne1, ne0] of a tensor of the open graph: a non-contiguous view made contiguous
  // Drawn only in programs whose options byte has bit 4 set (Program's `get_rows`).
  kGetRows,       // float32 [ne0, n]: n rows of a tensor of the open graph, picked by an int32 index tensor
  // Drawn only in programs whose options byte has bit 5 set (Program's `rope`), where model ops are (AllocatorRules).
  kRope,          // rope of a tensor of the open graph with ne0 >= 2, its positions from an int32 input
  // Drawn only in programs whose options byte has bit 6 set (Program's `set_rows`), where model ops are.
  kSetRows,       // rows of a float32 tensor of the open graph written into distinct rows of another one, in place
  // Drawn only in programs whose second options byte has bit 3 set (Program's `conv`), where the allocator draws it
  // (AllocatorRules::draws_conv).
  kConvDw,        // depthwise conv_2d (ggml_conv_2d_dw_direct): a small kernel of the open graph over another tensor of it
  kMaxValue = kConvDw,
};

struct Step {
  StepKind kind = StepKind::kSeal;
  int graph = 0;            // the graph the step acts on
  int allocator = 0;        // kReserve, kAlloc
  TensorSpec tensor;        // kLeaf .. kViewExternal, kGrow: the tensor added (index = tensor_index)
  int tensor_index = -1;    // the tensor added, marked, rewired or toggled
  int slot = 0;             // kRewire: which source
  int new_src = -1;         // kRewire
  // Predictions.
  StatusCode expect = StatusCode::kOk;
  // The state the model found the step's object in (Model::StateOf), for `lifeline coverage --states`.
  const char* state = nullptr;
};

struct AllocatorSpec {
  std::vector<alloc::BufferSpec> buffers;
  // Threads of ggml's CPU backend for every compute of a graph this allocator placed (ggml_graph_topology; the
  // stand-in ignores it). Bits 1 and 2 of the byte whose bit 0 gives the buffer count, which the decoder read
  // and ignored before, so existing programs keep their steps.
  int cpu_threads = 1;
};
inline constexpr int kMaxCpuThreads = 4;
inline constexpr size_t kChunkedBufferBytes = 256;  // Program::chunked

struct Program {
  AllocatorSpec allocators[kAllocators];
  // Bit 3 of allocator 0's byte: whether kMeasure may be drawn; bit 4: kRowOp; bit 5: kMatMul. Encoding sets
  // each when a step needs it. Bit 6 (`weights`) and bit 7 (an options byte follows) were cleared in every
  // checked-in input before use.
  bool measures = false;
  bool row_ops = false;
  bool mul_mats = false;
  // Bit 6: the pre-allocated leafs of every build are placed as llama.cpp places weights, in a context of their
  // own by ggml_backend_alloc_ctx_tensors*, or by hand with a ggml_tallocr on g3 (AllocatorAdapter::Configure;
  // ggml's CPU adapter only).
  // It draws no step: the program's JSON says it ("weights": true) and encoding sets it from there.
  bool weights = false;
  // Bit 0 of the options byte (read only when bit 7 is set; format.cc): ggml's CPU backend computes every graph
  // on one thread pool of the most threads it may run, each compute with its allocator's thread count, as
  // llama.cpp uses one pool per context for decodes and batches of different thread counts
  // (AllocatorAdapter::Configure; the upstream adapters). Without it, one pool per thread count. Draws no step
  // either ("shared_pool": true).
  bool shared_pool = false;
  // Bit 1 of the options byte: an alloc+compute of a graph whose placement is its allocator's last act, unchanged
  // since and reading no other graph's bytes, computes the same build again with its inputs set anew, nothing
  // built or allocated: llama.cpp's graph reuse (the upstream adapters; "reuse": true). The model is unchanged:
  // such a step is legal either way.
  bool reuse = false;
  // Bit 2 of the options byte: the host buffer types of the program's allocators say a maximum size of
  // kChunkedBufferBytes, so gallocr spreads a plan over several chunks, each a buffer of its own (ggml's
  // CPU adapter; "chunked": true). Draws no step: gallocr chunks transparently, and a tensor larger than a
  // chunk gets one of its own size.
  bool chunked = false;
  // Bit 3 of the options byte: kTranspose may be drawn (encoding sets it when a step is one).
  bool layout_ops = false;
  // Bit 4 of the options byte: kGetRows may be drawn (encoding sets it when a step is one).
  bool get_rows = false;
  // Bit 5 of the options byte: kRope may be drawn (the same; no checked-in input had the bit set before it meant this).
  bool rope = false;
  // Bit 6 of the options byte: kSetRows may be drawn (the same; the two checked-in inputs that had it set were
  // re-encoded to their same programs first).
  bool set_rows = false;
  // Bit 7 of the options byte: a second options byte follows (read only then). Its bit 0: a kMatMul's first source may
  // be float16 (a model's float16 weights times float32 activations); without it, float32 only, as before (encoding
  // sets it when a mul_mat's first source is float16). Its bit 1: Program::unplanned_allocs. Its other bits are for
  // options to come (written 0, ignored).
  bool f16_mul_mat = false;
  // Bit 1 of the second options byte: an alloc+compute by an allocator of several buffers that has planned nothing yet
  // stays an alloc+compute, predicted FAILED_PRECONDITION (ggml_gallocr_alloc_graph cannot re-plan several buffers by
  // itself and returns false; the stand-in refuses alike), instead of becoming a reserve. Draws no step
  // ("unplanned_allocs": true).
  bool unplanned_allocs = false;
  // Bit 2 of the second options byte: every graph an allocator places or plans goes through its ggml_backend_sched,
  // as llama.cpp and whisper.cpp compute every graph, not only those with an op marked `cpu`. Nothing marked, the
  // scheduler gives an input the CPU and a leaf with memory its buffer's backend (a plain leaf the first backend:
  // GgmlGraphAdapter::SchedulerFor), and an op the backend of what it reads: a graph fed by inputs alone runs on
  // the CPU, as a llama.cpp graph without weights would. Only where the allocator under test
  // has a scheduler (AllocatorRules::splits_cpu_marks); others ignore it. Draws no step ("scheduled": true).
  bool scheduled = false;
  // Bit 3 of the second options byte: kConvDw may be drawn (encoding sets it when a step is one; no checked-in input
  // had the second byte's bit 3 set before it meant this).
  bool conv = false;
  std::vector<Step> steps;
};

// What the model knows of the allocator under test beyond the rules every allocator keeps: which requests
// it refuses up front. The stand-in refuses none; upstream ggml with a guard on (core/guards.h,
// ggml_adapter.h GgmlRules) refuses some, and the model predicts those refusals like any other status.
struct AllocatorRules {
  // AllocAndCompute of a graph holding a scale of a float16 tensor returns kUnimplemented, before anything
  // is placed (ggml's CPU backend claims the op but aborts computing it).
  bool refuses_f16_scale = false;
  // The same for a graph holding a rope of a tensor with an odd ne0 (ggml's CPU backend with guard
  // ggml-cpu-rope-odd-row-overflow on: its kernel writes one element past each row).
  bool refuses_odd_rope = false;
  // A graph is computed by a scheduler splitting it between two backends when it holds a reachable op marked
  // `cpu`, or reads bytes of a graph whose last placement was split (they may lie in CPU memory), or when the
  // program says every graph is (Program::scheduled). Such a graph
  // is placed by the scheduler of the step's allocator, not by its gallocr: it never needs a reserve first,
  // and reserving it leaves the gallocr's plan as it was (ggml_vulkan_adapter.h).
  bool splits_cpu_marks = false;
  // The same for a graph holding a rope of a float16 tensor (ggml-vulkan as built here): glslang before its fix
  // for KhronosGroup/glslang#3616 (Debian 12's among them) compiles `float16_t(x)` of a float16_t x to an
  // OpFConvert from half to half, which SPIR-V forbids; rope_{norm,neox}_f16 do that (rope_funcs.glsl, built
  // without spirv-opt since ggml-org/llama.cpp#16860), and the validation layer rejects the module.
  bool refuses_f16_rope = false;
  // The same for a graph holding a mul_mat or a soft_max with a source that starts a number of bytes into its
  // placed tensor that is not a multiple of this alignment (0: none refused); a view at an element offset makes
  // one. ggml-vulkan with guard ggml-vk-mul-mat-misaligned-src on: those two ops' shaders take no offset, and it
  // aborts on such a source (mul_mat: GGML_ASSERT in ggml_vk_tensor_subbuffer; soft_max: in
  // init_pushconst_tensor_offsets, the assert of ggml-org/llama.cpp#22516) where a multiple of
  // minStorageBufferOffsetAlignment (16 on lavapipe) is needed.
  int refuses_misaligned_sources = 0;
  // ... and for a neg too (a unary op), where the tree's ggml-vulkan binds unary sources without an offset.
  bool misaligned_unary_too = false;
  // The same for a graph holding a set_rows (every one, or one whose source rows are float16) where the ggml tree's
  // ggml_set_rows does not take it: none before mid-2025, int64 row indices only until late 2025 (the adapters'
  // are int32), float32 source rows only in some trees (cmake/LifelineGgml.cmake reads its asserts).
  bool refuses_set_rows = false;
  bool refuses_f16_set_rows = false;
  // The same for a graph holding a node of an op the backend does not take for its types: `op` computing `out`
  // from sources of types `a` and `b` (b = a for one source). ggml-vulkan's answers differ between ggml versions
  // (0.15.1's takes no float16 concat); the Vulkan target asks its backend (ggml_vulkan_adapter.h). Null: none.
  bool (*backend_refuses)(alloc::Op op, alloc::DType out, alloc::DType a, alloc::DType b) = nullptr;
  // Whether kConvDw may be drawn: the CPU targets (the stand-in, ggml's CPU backend where the tree has
  // ggml_conv_2d_dw_direct); not ggml-vulkan, whose supports_op probe (backend_refuses) builds no convolution.
  bool draws_conv = true;
  // The same as refuses_f16_scale for a graph holding a conv_2d_dw of a float16 input (ggml's CPU backend with guard
  // ggml-cpu-conv-2d-dw-f16-input on: supports_op says yes, and its kernel writes float32 results into the float16
  // destination, twice its bytes).
  bool refuses_f16_conv = false;
};

Program Decode(const uint8_t* data, size_t size, const AllocatorRules& rules = {});

// Whether a step of kind `k` adds a tensor (leaf .. view-external, grow).
bool AddsTensor(StepKind k);

// The source rows a kGetRows tensor reads: its ne[1] of them, into rows[] (of alloc::kMaxRows), for a source of
// `source_rows` rows.
void RowsOf(const TensorSpec& spec, int64_t source_rows, int32_t* rows);
// The destination rows of a kSetRows tensor: one per row of its src[1], `source_rows` of them, into rows[] (of
// alloc::kMaxRows), for a destination of `destination_rows` rows.
void SetRowsOf(const TensorSpec& spec, int64_t source_rows, int64_t destination_rows, int32_t* rows);
// The positions of a kRope tensor's tokens (its ne[1] / rope.heads of them).
std::vector<int32_t> PositionsOf(const TensorSpec& spec);
inline constexpr int kMaxRopePosition = 255;  // pos_first's range; pos_step is 0 to kMaxRopeStep
inline constexpr int kMaxRopeStep = 3;
inline constexpr int kMaxConvKernel = 9;  // a kConvDw kernel's elements (3x3 at most, as a depthwise conv's)

// A program's id form, which the reducer edits (codec.h) and Encode takes: every operand that names a
// tensor or a graph names the step that made it instead of giving its position, so deleting steps leaves
// the others' operands meaning what they meant. A tensor is named by the step that added it, a graph by
// the step that sealed it: `tensor.src`, `tensor.external_tensor`, `new_src` and a marked, rewired or
// toggled `tensor_index` hold step indexes; so does `graph`, which build steps set to the seal of the
// graph they build (-1 while it is open). A step that adds a tensor has its own index in `tensor_index`,
// a seal in `graph`; a seal's `tensor_index` (the tensor it made the output) names its step too.
Program ToIds(const Program& program);

// Whether two steps in id form are the same step: every operand and choice the bytes decide; the model's
// predictions and what it derives alone (a seal's output, a toggle's result) are not compared.
bool SameStep(const Step& a, const Step& b);

// Encoding: the input whose decoding, in id form, is `target` (a program in id form). Throws
// programs::Unencodable naming the first op that cannot be written: one the model does not allow at that
// point, an operand it does not offer, or an op the decoder would make into another.
std::vector<uint8_t> Encode(const Program& target, const AllocatorRules& rules = {});

// The steps' names as traces and a program's JSON (codec.h) write them, in StepKind order.
extern const char* const kStepNames[static_cast<int>(StepKind::kMaxValue) + 1];

// One line per step, e.g. `alloc+compute g0 with allocator 1`.
std::string Describe(const Step& step);
// The allocators, one line each, then "#i <step>" per step.
std::string Describe(const Program& program);
// The allocator lines alone: the preamble of the program's trace.
std::string DescribeAllocators(const Program& program);

}  // namespace lifeline::graphs
