// The throughput ceiling: a target that reads its input and does nothing else. bench/throughput.py runs
// it on the same inputs and with the same length limit as a real target, so the ratio of their exec/s is
// the share of libFuzzer's own ceiling that the real target reaches. Not a test; built in the fuzz lane.
#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  volatile uint8_t sink = 0;
  for (size_t i = 0; i < size; ++i) sink = sink ^ data[i];
  return 0;
}
