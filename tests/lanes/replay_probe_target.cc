// A target for testing the replay driver itself (tests/cli/test_replay_driver.py):
//   input starting with 'O': reads one byte past the end (must be an ASan/valgrind report: the driver
//                            gives each input an exactly sized heap copy)
//   anything else: prints "probe: <size>" so the test sees which inputs ran, in which order
#include <cstddef>
#include <cstdint>
#include <cstdio>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 0 && data[0] == 'O') {
    volatile uint8_t past_end = data[size];
    (void)past_end;
  }
  std::printf("probe: %zu\n", size);
  return 0;
}
