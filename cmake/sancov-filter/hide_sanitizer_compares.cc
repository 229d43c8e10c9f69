// A clang pass plugin for the fuzz lane: UBSan's checks stay exactly as they are, but libFuzzer's comparison
// tracing no longer calls into the engine for each of them.
//
// Why. -fsanitize=fuzzer(-no-link) turns on SanitizerCoverage's trace-cmp: before every integer comparison it
// inserts a call, __sanitizer_cov_trace_[const_]cmp{1,2,4,8}, which feeds libFuzzer's table of recent
// comparisons and its value profile. SanitizerCoverage does not look at the !nosanitize metadata that clang
// puts on the instructions of a sanitizer's own checks, so with -fsanitize=undefined every alignment, null,
// pointer-overflow, object-size, bounds and shift check gets a call too: in alloc_graph_topology's fuzz build
// the call sites of __sanitizer_cov_trace_const_cmp8 go from 1,141 (no sanitizer) to 2,209, and the trace calls
// took 32% of the fuzz lane's time, five times their time per input without sanitizers (perf, 2026-11-25). They
// trace nothing of the program: `(uintptr_t)p & 7` against 0 for every member access through a pointer, not a
// value the input steers toward a branch.
//
// What. Before SanitizerCoverage runs (this plugin's pass is registered at the optimizer's last extension
// point, where clang adds the sanitizer passes after it), every integer comparison of a check (it carries
// !nosanitize, or its value only decides branches to UBSan's handlers: OnlyDecidesChecks) is rewritten to compare its operands widened to i128 (sign-extended for a signed predicate, zero-extended
// otherwise): the same result for every input. SanitizerCoverage traces only comparisons of 8, 16, 32 or 64
// bits, so it leaves these alone; the code generator narrows them back. Comparisons of the program itself carry
// no !nosanitize and are traced as before. Nothing else changes: every check, its branch and its handler are
// the same, and AddressSanitizer (which adds its own checks after this pass) is untouched.
//
// Measured (bench/throughput.py, 2026-11-25; docs/benchmarks.md "Sanitizer overhead"): fuzz-lane exec/s +46%
// alloc_graph_topology, +26% interop_capsule_lifecycle, +39% ggml_graph_topology. Tested by
// tests/lanes/sancov_filter_check.py (unit.sancov-filter.*): UBSan still reports each kind of check, and only
// the sanitizer's comparisons lose their trace call.
#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/PassPlugin.h"

namespace {

// A block that reports a UBSan finding: it calls one of UBSan's handlers (or its trap, with -fsanitize-trap).
bool IsUbsanHandlerBlock(const llvm::BasicBlock* bb) {
  for (const llvm::Instruction& i : *bb) {
    const auto* call = llvm::dyn_cast<llvm::CallBase>(&i);
    const llvm::Function* callee = call != nullptr ? call->getCalledFunction() : nullptr;
    if (callee != nullptr && (callee->getName().startswith("__ubsan_handle_") ||
                              callee->getIntrinsicID() == llvm::Intrinsic::ubsantrap)) {
      return true;
    }
  }
  return false;
}

// Whether a comparison's value only decides UBSan's checks: each use is an instruction of a check (it carries
// !nosanitize: clang marks the branches and the combining of a check's conditions), a branch to a handler
// block, or an and/or/xor of i1s whose own uses are such. The optimizer rewrites some of a check's comparisons
// (instcombine narrows a bounds or shift check to the index's width) and the new instruction loses !nosanitize;
// this finds those by what they decide.
bool OnlyDecidesChecks(const llvm::Value* v, unsigned nosanitize, int depth = 0) {
  if (depth > 8 || v->use_empty()) return false;
  for (const llvm::User* u : v->users()) {
    const auto* inst = llvm::dyn_cast<llvm::Instruction>(u);
    if (inst == nullptr) return false;
    if (inst->getMetadata(nosanitize) != nullptr) continue;
    if (const auto* br = llvm::dyn_cast<llvm::BranchInst>(inst)) {
      if (br->isConditional() && (IsUbsanHandlerBlock(br->getSuccessor(0)) || IsUbsanHandlerBlock(br->getSuccessor(1)))) {
        continue;
      }
      return false;
    }
    const auto* op = llvm::dyn_cast<llvm::BinaryOperator>(inst);
    const bool combines = op != nullptr && op->getType()->isIntegerTy(1) &&
                          (op->getOpcode() == llvm::Instruction::And || op->getOpcode() == llvm::Instruction::Or ||
                           op->getOpcode() == llvm::Instruction::Xor);
    if (!combines || !OnlyDecidesChecks(op, nosanitize, depth + 1)) return false;
  }
  return true;
}

class HideSanitizerCompares : public llvm::PassInfoMixin<HideSanitizerCompares> {
 public:
  llvm::PreservedAnalyses run(llvm::Function& f, llvm::FunctionAnalysisManager&) {
    const unsigned nosanitize = f.getContext().getMDKindID("nosanitize");
    llvm::SmallVector<llvm::ICmpInst*, 64> checks;
    for (llvm::Instruction& i : llvm::instructions(f)) {
      auto* cmp = llvm::dyn_cast<llvm::ICmpInst>(&i);
      if (cmp == nullptr || !cmp->getOperand(0)->getType()->isIntegerTy() ||
          cmp->getOperand(0)->getType()->getIntegerBitWidth() > 64) {
        continue;  // pointers and vectors are never traced; wider integers neither
      }
      if (cmp->getMetadata(nosanitize) != nullptr || OnlyDecidesChecks(cmp, nosanitize)) checks.push_back(cmp);
    }
    for (llvm::ICmpInst* cmp : checks) {
      llvm::IRBuilder<> b(cmp);
      llvm::Type* wide = b.getInt128Ty();
      auto widen = [&](llvm::Value* v) { return cmp->isSigned() ? b.CreateSExt(v, wide) : b.CreateZExt(v, wide); };
      llvm::Value* widened = b.CreateICmp(cmp->getPredicate(), widen(cmp->getOperand(0)), widen(cmp->getOperand(1)),
                                          cmp->getName());
      if (auto* inst = llvm::dyn_cast<llvm::Instruction>(widened)) inst->copyMetadata(*cmp);  // !nosanitize too
      cmp->replaceAllUsesWith(widened);
      cmp->eraseFromParent();
    }
    return checks.empty() ? llvm::PreservedAnalyses::all() : llvm::PreservedAnalyses::none();
  }
};

}  // namespace

extern "C" LLVM_ATTRIBUTE_WEAK llvm::PassPluginLibraryInfo llvmGetPassPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "lifeline-hide-sanitizer-compares", "1", [](llvm::PassBuilder& pb) {
            pb.registerOptimizerLastEPCallback([](llvm::ModulePassManager& mpm, llvm::OptimizationLevel) {
              mpm.addPass(llvm::createModuleToFunctionPassAdaptor(HideSanitizerCompares()));
            });
          }};
}
