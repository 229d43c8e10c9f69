// The capsule programs as JSON (harness/programs/common/codec.h): what `lifeline reduce` edits.
//
//   {"format": "capsule", "peers": ["numpy", "torch"],
//    "ops": [{"id": 0, "op": "create-array", "peer": "torch", "dtype": "complex64", "shape": [2, 3],
//             "layout": "contiguous", "seed": 7, "readonly": false, "flavor": "neg"},
//            {"id": 1, "op": "export-array", "src": "#0", "via": "to_dlpack"}, ...]}
//
// A peer's ops are named "peer-..." ("peer-from-capsule") with the acting peer in "peer" when the program
// has several. Operands by op: create-tensor: dtype, shape, layout, seed, readonly; create-array: the same,
// peer and flavor; export-array: src, via (__dlpack__ | to_dlpack); import-from-tensor, import-from-array:
// src, contiguous; malformed, peer-malformed: src, kind (the Malformed name); read, drop: src (any kind of
// object); every other op but collect: src. `src` is "#<id>" of the op that made the object; "model" holds
// the predicted exception ("raises").
#pragma once

#include <memory>

#include "harness/programs/capsule/format.h"
#include "harness/programs/common/codec.h"

namespace lifeline::capsule {

std::unique_ptr<programs::Codec> MakeCodec(const Peers& peers);

}  // namespace lifeline::capsule
