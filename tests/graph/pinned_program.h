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
  return b;
}

}  // namespace lifeline::graphs
