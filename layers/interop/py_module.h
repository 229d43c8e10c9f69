// `_lifeline_interop`: the interop layer's Python extension module, built into the embedding executable
// (registered by python_runtime.cc before the interpreter starts).
//
//   Tensor(dtype, shape, layout="contiguous", seed=0, readonly=False)   a producer tensor filled with
//       PatternValue(dtype, seed, i); __dlpack__(stream=None), __dlpack_device__(), values() (the
//       logical elements in C order), contiguous() (itself, or a contiguous copy), attributes shape,
//       dtype, layout, nbytes, storage_id, is_contiguous, readonly.
//   View       what an import returns: values(), shape, dtype, buffer() -> Buffer.
//   Buffer     a handle that keeps the imported buffer alive on its own.
//   CapsuleHolder(capsule)   an object whose __dlpack__ hands out that capsule (to feed a given capsule
//       to numpy.from_dlpack, which takes exporters, not capsules).
//   import_capsule(capsule) -> View                 the consumer (dlpack_consumer.h)
//   import_from(obj, contiguous=False) -> View      the Python-side import wrapper
//   malformed_capsule(kind, tensor) -> capsule       a deliberately broken export of `tensor`
//   producer_stats() / consumer_stats() -> dict; live_storages() -> str; reset_ledger()
//   expected_values(dtype, count, seed) -> list     PatternValue for elements 0..count-1
#pragma once

#include <Python.h>

namespace lifeline::py {

inline constexpr const char* kModuleName = "_lifeline_interop";

}  // namespace lifeline::py

extern "C" PyObject* PyInit__lifeline_interop(void);
