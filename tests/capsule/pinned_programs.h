// Three capsule programs pinned by the decoder's golden test and run by the executor tests.
#pragma once

#include <cstdint>

namespace lifeline::capsule {

// FuzzedDataProvider takes integers from the back of the input; these pin one program each.
inline constexpr uint8_t kProgramA[] = {
    0x07, 0x04, 0x01, 0x04, 0x02, 0x02, 0x0f, 0x09, 0x0c, 0x03, 0x0a, 0x0b,
    0x05, 0x02, 0x04, 0x08, 0x0c, 0x0b, 0x0a, 0x08, 0x08, 0x07, 0x0d, 0x06,
};
inline constexpr uint8_t kProgramB[] = {
    0x0e, 0x0f, 0x03, 0x09, 0x0a, 0x03, 0x06, 0x07, 0x0d, 0x02, 0x02, 0x0e,
    0x06, 0x09, 0x0f, 0x05, 0x08, 0x0a, 0x02, 0x0c, 0x0a, 0x0c, 0x03, 0x02,
    0x04, 0x07, 0x08, 0x01, 0x0e, 0x05, 0x01, 0x0c, 0x09, 0x08, 0x01, 0x06,
    0x00, 0x05, 0x0a, 0x09,
};
inline constexpr uint8_t kProgramC[] = {0x03, 0x00, 0x0e, 0x02, 0x04, 0x01, 0x00, 0x0c, 0x01, 0x03, 0x02, 0x02,
                                 0x00, 0x01, 0x07, 0x03, 0x04, 0x05, 0x02, 0x00, 0x09, 0x01, 0x00, 0x00};

inline constexpr char kProgramAText[] =
    "#0 create-tensor float16[3,3] strided seed=11 -> t0\n"
    "#1 malformed too-many-dims of t0 -> v0  (raises BufferError)\n"
    "#2 export-tensor t0 -> c0\n"
    "#3 numpy-from-tensor t0 -> a0\n"
    "#4 collect\n"
    "#5 drop t0\n"
    "#6 import-capsule c0 -> v0\n"
    "#7 make-cycle v0\n"
    "#8 read a0\n"
    "#9 export-array a0 -> c1  (raises BufferError)\n"
    "#10 export-array a0 -> c1  (raises BufferError)\n"
    "#11 import-from-array a0 -> v0  (raises BufferError)\n"
    "#12 create-array float32[0,0] contiguous seed=0 -> a1\n";
inline constexpr char kProgramBText[] =
    "#0 create-tensor int8[] contiguous seed=6 readonly -> t0\n"
    "#1 malformed dtype of t0 -> v0  (raises BufferError)\n"
    "#2 import-from-tensor t0 contiguous -> v0\n"
    "#3 view-buffer v0 -> b0\n"
    "#4 import-from-tensor t0 contiguous -> v1\n"
    "#5 make-cycle v1\n"
    "#6 numpy-from-tensor t0 -> a0\n"
    "#7 export-tensor t0 -> c0\n"
    "#8 export-array a0 -> c1  (raises BufferError)\n"
    "#9 make-cycle v0\n"
    "#10 drop t0\n"
    "#11 export-array a0 -> c1  (raises BufferError)\n"
    "#12 create-array float32[] offset seed=9 -> a1\n"
    "#13 numpy-from-capsule c0 -> a2\n"
    "#14 export-array a2 -> c1  (raises BufferError)\n"
    "#15 import-from-array a1 -> v0\n"
    "#16 view-buffer v0 -> b1\n"
    "#17 import-capsule c0 -> v1  (raises BufferError)\n"
    "#18 collect\n"
    "#19 make-cycle v0\n"
    "#20 import-capsule c0 -> v0  (raises BufferError)\n"
    "#21 read a2\n";
inline constexpr char kProgramCText[] =
    "#0 create-tensor float32[4] contiguous seed=2 readonly -> t0\n"
    "#1 numpy-from-tensor t0 -> a0\n"
    "#2 export-array a0 -> c0  (raises BufferError)\n"
    "#3 read a0\n"
    "#4 create-tensor int8[3,1] contiguous seed=0 readonly -> t1\n"
    "#5 import-from-tensor t0 -> v0\n"
    "#6 create-tensor bool[] contiguous seed=0 -> t2\n";

}  // namespace lifeline::capsule
