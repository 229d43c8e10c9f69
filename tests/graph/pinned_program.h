// The graph program both the decoder's golden test and the executor tests use.
#pragma once

#include <cstdint>
#include <vector>

namespace lifeline::graphs {

// 96 bytes of a fixed arithmetic sequence: enough for most step kinds. Step 30 is
// "alloc+compute g0 with allocator 0" (tests/graph/decoder_test.cc pins the whole program).
inline std::vector<uint8_t> Sequence() {
  std::vector<uint8_t> b(96);
  for (int i = 0; i < 96; ++i) b[i] = static_cast<uint8_t>((i * 73 + 29) & 0xff);
  // The last byte (allocator 0's) keeps bits 0 to 3 only: bits 3 and up add step kinds (format.h, Program), and
  // this program predates them; its steps stay as pinned (the checked-in inputs were rewritten the same way).
  b.back() &= 0x0f;
  return b;
}

}  // namespace lifeline::graphs
