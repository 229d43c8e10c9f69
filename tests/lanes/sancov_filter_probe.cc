// Compiled to LLVM IR by sancov_filter_check.py, with the fuzz lane's instrumentation, with and without the
// lane's pass plugin (cmake/sancov-filter/). extern "C": the checker finds the functions by name.
struct Item {
  long size;
  int kind;
  Item* next;
};

// UBSan's checks only (alignment and null on every load through a pointer, bounds, shift), no comparison of
// its own: every trace call here is one of UBSan's.
extern "C" long ChecksOnly(const Item* item, const long (*table)[8], int i, int s) {
  return item->size + item->next->size + (*table)[i] + (item->kind << s);
}

// The program's own comparisons, no pointer, no UBSan check: traced with or without the plugin.
extern "C" int ProgramCompares(long x, int y) {
  if (x == 0x1234567) return 1;
  if (y < 1000) return 2;
  return 3;
}

// One comparison of the program's (a 64-bit one of two loaded values) beside UBSan's checks of the loads.
extern "C" int Mixed(const Item* item, const long* limit) { return item->size == *limit ? item->kind : 0; }
