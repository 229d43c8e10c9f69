// The DLPack interop layer seen from Python: this layer's Tensor and NumPy 1.24 as producers, this
// layer's import and numpy.from_dlpack as consumers, all in the embedded interpreter of the harness.
//
// Every test runs under DlpackTest (tests/testing/python_fixture.h): Python snippets in a fresh globals
// dict, and a TearDown that fails the test if any producer storage, byte or export, or any imported
// buffer or view, is left behind.
#include <Python.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "layers/interop/dlpack_consumer.h"
#include "layers/interop/dlpack_producer.h"
#include "layers/interop/python_runtime.h"
#include "tests/testing/python_fixture.h"

namespace lifeline {
namespace {

using py::Ref;
using testing_util::DlpackTest;

// ---- round trips with NumPy -------------------------------------------------------------------------

// Scenario: NumPy round trip, ours -> NumPy. Every float32, float16 and int8 tensor of ndim 0..4 (zero-
// size shapes included) in every layout reaches numpy.from_dlpack with the values the producer wrote, as
// a read-only array; dropping the array releases the export.
TEST_F(DlpackTest, NumpyReadsOurTensorsWithTheirValuesInEveryLayout) {
  const char* dtypes[] = {"float32", "float16", "int8"};
  const char* layouts[] = {"contiguous", "transposed", "strided",      "offset",      "reversed",
                           "broadcast",  "null-strides", "reversed-all", "unit-strides"};
  const char* shapes[] = {"()", "(5,)", "(0,)", "(2, 3)", "(0, 3)", "(3, 0)", "(2, 3, 4)", "(1, 2, 0, 3)",
                          "(2, 1, 3, 2)", "(1, 3, 1)"};
  for (const char* dtype : dtypes) {
    for (const char* layout : layouts) {
      for (const char* shape : shapes) {
        SCOPED_TRACE(std::string(dtype) + " " + layout + " " + shape);
        ASSERT_TRUE(Run(std::string("dtype, layout, shape = '") + dtype + "', '" + layout + "', " + shape));
        ASSERT_TRUE(Run(R"PY(
            t = li.Tensor(dtype, shape, layout, seed=7)
            a = np.from_dlpack(t)
            assert a.shape == shape, (a.shape, shape)
            assert str(a.dtype) == dtype, a.dtype
            assert not a.flags.writeable
            got, want = a.reshape(-1).tolist(), t.values()
            assert got == want, (got, want)
            stats = li.producer_stats()
            assert stats["exports_live"] == 1, stats
            del a
            assert li.producer_stats()["exports_live"] == 0, li.producer_stats()
            del t
            assert li.producer_stats()["storages_live"] == 0, li.live_storages()
        )PY"));
      }
    }
  }
}

// The strides the producer places the two layouts of 2026-11-27 with (li.strides, which the peers' Python uses
// to make the same layouts): every axis reversed; the axes of extent 1 with strides no element steps by.
TEST_F(DlpackTest, ReversedAllAndUnitStridesArePlacedAsDocumented) {
  ASSERT_TRUE(Run(R"PY(
      assert li.strides((2, 3, 4), "reversed-all") == (-12, -4, -1), li.strides((2, 3, 4), "reversed-all")
      assert li.strides((1, 1, 3, 1), "unit-strides") == (0, 4099, 1, 4099), li.strides((1, 1, 3, 1), "unit-strides")
      assert li.strides((2, 3), "unit-strides") == (3, 1)
      t = li.Tensor("int8", (2, 3), "reversed-all", seed=3)
      assert t.nbytes == 6 and not t.is_contiguous, (t.nbytes, t.is_contiguous)
      u = li.Tensor("float32", (1, 3, 1), "unit-strides", seed=3)
      assert u.nbytes == 12 and u.is_contiguous, (u.nbytes, u.is_contiguous)
      try:
          li.strides((2,), "diagonal")
          raise AssertionError("an unknown layout was placed")
      except ValueError as e:
          assert "unit-strides" in str(e), e
  )PY"));
}

// Scenario: NumPy round trip, NumPy -> ours. NumPy-owned arrays, contiguous or not (a transpose, every
// other column, an offset slice), of float32, float16 and int8 import through a capsule with their
// values; dropping the view calls NumPy's deleter once.
TEST_F(DlpackTest, OurImportReadsNumpyArraysWithTheirValues) {
  ASSERT_TRUE(Run(R"PY(
      base = np.arange(-12, 12).reshape(4, 6)
      cases = {
          "c-order": lambda d: base.astype(d),
          "transposed": lambda d: base.astype(d).T,
          "every-other-column": lambda d: base.astype(d)[:, ::2],
          "offset-slice": lambda d: base.astype(d)[1:, 2:],
          "reversed": lambda d: base.astype(d)[::-1],
          "scalar": lambda d: np.array(3, dtype=d),
          "zero-size": lambda d: np.zeros((0, 3), dtype=d),
          "3d-strided": lambda d: base.astype(d).reshape(2, 3, 4)[:, ::2, 1::2],
      }
  )PY"));
  for (const char* dtype : {"np.float32", "np.float16", "np.int8"}) {
    for (const char* name : {"c-order", "transposed", "every-other-column", "offset-slice", "reversed", "scalar",
                             "zero-size", "3d-strided"}) {
      SCOPED_TRACE(std::string(dtype) + " " + name);
      ASSERT_TRUE(Run(std::string("a = cases['") + name + "'](" + dtype + ")"));
      ASSERT_TRUE(Run(R"PY(
          c0 = li.consumer_stats()
          v = li.import_capsule(a.__dlpack__())
          assert v.shape == a.shape, (v.shape, a.shape)
          assert v.dtype == str(a.dtype), (v.dtype, a.dtype)
          got, want = v.values(), a.reshape(-1).tolist()
          assert got == want, (got, want)
          del v
          c1 = li.consumer_stats()
          assert c1["deleter_calls"] == c0["deleter_calls"] + 1, (c0, c1)
          assert c1["views_live"] == 0 and c1["buffers_live"] == 0, c1
          del a
      )PY"));
    }
  }
}

// Scenario: a chain ours -> NumPy -> ours. NumPy's view of our transposed tensor is read-only (NumPy 1.24
// refuses to export it); a contiguous copy exports, and our import of it reads the producer's values. The
// producer storage is released as soon as NumPy's array goes, while the copy lives on.
TEST_F(DlpackTest, ValuesSurviveAChainThroughANumpyCopy) {
  ASSERT_TRUE(Run(R"PY(
      for dtype in ("float32", "float16", "int8"):
          t = li.Tensor(dtype, (3, 4), "transposed", seed=5)
          a = np.from_dlpack(t)
          try:
              a.__dlpack__()
              raise AssertionError("NumPy exported a read-only array")
          except BufferError:
              pass
          c = np.ascontiguousarray(a)
          assert c.flags.writeable and c.flags.c_contiguous
          want = t.values()
          del a, t
          assert li.producer_stats()["storages_live"] == 0, li.live_storages()
          v = li.import_capsule(c.__dlpack__())
          assert v.values() == want, (v.values(), want)
          assert v.shape == (3, 4)
          del c
          assert v.values() == want  # the view keeps NumPy's copy alive
          del v
  )PY"));
}

// Scenario: import_from accepts NumPy arrays too, through ascontiguousarray when asked for contiguous.
TEST_F(DlpackTest, ImportFromReadsNumpyArraysDirectlyAndThroughAContiguousCopy) {
  ASSERT_TRUE(Run(R"PY(
      a = np.arange(12, dtype=np.float32).reshape(3, 4).T
      for contiguous in (False, True):
          v = li.import_from(a, contiguous=contiguous)
          assert v.values() == a.reshape(-1).tolist(), (contiguous, v.values())
          del v
  )PY"));
}

// ---- consumption ------------------------------------------------------------------------------------

// Scenario: a capsule is consumed once. The second import of the same capsule is a BufferError that says
// so, NumPy refuses the consumed capsule with ValueError, and the first import's view still reads the
// values; nothing leaks.
TEST_F(DlpackTest, ConsumedCapsuleIsRefusedOnSecondImport) {
  ASSERT_TRUE(Run(R"PY(
      t = li.Tensor("float32", (2, 3), seed=3)
      cap = t.__dlpack__()
      v = li.import_capsule(cap)
      try:
          li.import_capsule(cap)
          raise AssertionError("a consumed capsule was imported twice")
      except BufferError as e:
          assert "already consumed" in str(e), str(e)
      try:
          np.from_dlpack(li.CapsuleHolder(cap))
          raise AssertionError("NumPy imported a consumed capsule")
      except ValueError:
          pass
      assert li.consumer_stats()["imports"] >= 1
      assert v.values() == t.values()
      assert li.producer_stats()["exports_live"] == 1, li.producer_stats()
      del cap, t
      assert li.producer_stats()["exports_live"] == 1  # the view owns the export now
      del v
      assert li.producer_stats()["exports_live"] == 0, li.producer_stats()
  )PY"));
}

// Scenario: a capsule NumPy consumed first is refused by our import, and released by NumPy's array.
TEST_F(DlpackTest, CapsuleConsumedByNumpyIsRefusedByOurImport) {
  ASSERT_TRUE(Run(R"PY(
      t = li.Tensor("int8", (4,), seed=9)
      cap = t.__dlpack__()
      a = np.from_dlpack(li.CapsuleHolder(cap))
      assert a.tolist() == t.values()
      try:
          li.import_capsule(cap)
          raise AssertionError("imported a capsule NumPy consumed")
      except BufferError as e:
          assert "already consumed" in str(e), str(e)
      d0 = li.producer_stats()["deleter_calls"]
      del cap, t
      assert li.producer_stats()["deleter_calls"] == d0
      del a
      assert li.producer_stats()["deleter_calls"] == d0 + 1
  )PY"));
}

// Scenario: an unconsumed capsule that is simply dropped runs its deleter once through its destructor.
TEST_F(DlpackTest, DroppedUnconsumedCapsuleReleasesItsExport) {
  ASSERT_TRUE(Run(R"PY(
      t = li.Tensor("float16", (3,))
      d0 = li.producer_stats()["deleter_calls"]
      cap = t.__dlpack__()
      assert li.producer_stats()["exports_live"] == 1
      del cap
      p = li.producer_stats()
      assert p["exports_live"] == 0 and p["deleter_calls"] == d0 + 1, p
  )PY"));
}

// ---- malformed capsules -----------------------------------------------------------------------------

// Scenario: every malformed kind a conforming consumer must refuse is refused with a BufferError that
// names what is wrong, the capsule is left to its own destructor, and dropping it releases the export.
TEST_F(DlpackTest, EveryMalformedCapsuleIsRefusedWithItsProblemNamed) {
  struct Row {
    const char* kind;
    const char* message;
  };
  const Row rows[] = {
      {"wrong-name", "named \"not_dltensor\", not \"dltensor\""},
      {"used-name", "already consumed"},
      {"null-data", "DLTensor.data is NULL"},
      {"negative-ndim", "DLTensor.ndim is -1"},
      {"too-many-dims", "DLTensor.ndim is 33"},
      {"null-shape", "DLTensor.shape is NULL"},
      {"negative-dim", "DLTensor.shape[0] is -5"},
      {"overflow", "overflows int64"},
      {"device", "unsupported device kDLCUDA"},
      {"dtype", "unsupported dtype"},
      {"lanes", "lanes 2"},
  };
  ASSERT_TRUE(Run("t = li.Tensor('float32', (2, 3), seed=1)"));
  for (const Row& row : rows) {
    SCOPED_TRACE(row.kind);
    PyDict_SetItemString(globals_.get(), "kind", Ref::Steal(PyUnicode_FromString(row.kind)).get());
    PyDict_SetItemString(globals_.get(), "expected", Ref::Steal(PyUnicode_FromString(row.message)).get());
    ASSERT_TRUE(Run(R"PY(
        before = li.producer_stats()
        c0 = li.consumer_stats()
        cap = li.malformed_capsule(kind, t)
        assert li.producer_stats()["exports_live"] == before["exports_live"] + 1
        try:
            li.import_capsule(cap)
            raise AssertionError("a malformed capsule was imported")
        except BufferError as e:
            assert expected in str(e), str(e)
        c1 = li.consumer_stats()
        assert c1["buffers_live"] == c0["buffers_live"] and c1["imports"] == c0["imports"], (c0, c1)
        del cap
        after = li.producer_stats()
        assert after["exports_live"] == before["exports_live"], (before, after)
        assert after["deleter_calls"] == before["deleter_calls"] + 1, (before, after)
    )PY"));
  }
}

// Scenario: a NULL deleter is valid per the spec: the capsule imports, reads the values, and the producer
// keeps the storage alive until the ledger is reset.
TEST_F(DlpackTest, NullDeleterCapsuleImportsAndIsParkedUntilReset) {
  ASSERT_TRUE(Run(R"PY(
      t = li.Tensor("int8", (2, 2), seed=4)
      want = t.values()
      cap = li.malformed_capsule("null-deleter", t)
      v = li.import_capsule(cap)
      assert v.values() == want, (v.values(), want)
      del v, cap, t
      gc.collect()
      p = li.producer_stats()
      assert p["storages_live"] == 1 and p["exports_live"] == 1, p
      c = li.consumer_stats()
      assert c["views_live"] == 0 and c["buffers_live"] == 0, c
      li.reset_ledger()
      p = li.producer_stats()
      assert p["storages_live"] == 0 and p["exports_live"] == 0 and p["bytes_live"] == 0, p
  )PY"));
}

// The C++ side of the table: MustBeRefused agrees with the kinds above, and names round-trip.
TEST(DlpackMalformed, EveryKindButNullDeleterMustBeRefused) {
  for (int k = 0; k <= static_cast<int>(interop::Malformed::kMaxValue); ++k) {
    auto kind = static_cast<interop::Malformed>(k);
    SCOPED_TRACE(std::string(interop::MalformedName(kind)));
    EXPECT_EQ(interop::MustBeRefused(kind), kind != interop::Malformed::kNullDeleter);
    EXPECT_EQ(interop::MalformedFromName(interop::MalformedName(kind)), kind);
  }
  EXPECT_FALSE(interop::MalformedFromName("no-such-kind").has_value());
}

// ---- read-only and bool -----------------------------------------------------------------------------

// Scenario: read-only tensors export like any other (DLPack 0.6 cannot say read-only) and both consumers
// read their values; the storage checksum verified at release finds them untouched.
TEST_F(DlpackTest, ReadOnlyTensorsExportAndImportWithTheirValues) {
  ASSERT_TRUE(Run(R"PY(
      for dtype in ("float32", "float16", "int8"):
          for layout in ("contiguous", "transposed", "offset"):
              t = li.Tensor(dtype, (3, 2), layout, seed=2, readonly=True)
              assert t.readonly
              v = li.import_capsule(t.__dlpack__())
              assert v.values() == t.values(), (dtype, layout, v.values(), t.values())
              a = np.from_dlpack(t)
              assert a.reshape(-1).tolist() == t.values(), (dtype, layout)
              del v, a, t
  )PY"));
}

// Scenario: bool tensors (exported with DLPack 0.8's code 6) import with our consumer as Python bools;
// NumPy 1.24 refuses them with RuntimeError and the refused capsule still releases its export.
TEST_F(DlpackTest, BoolTensorsImportHereAndAreRefusedByNumpyWithoutLeaking) {
  ASSERT_TRUE(Run(R"PY(
      t = li.Tensor("bool", (3, 4), "strided", seed=6)
      want = t.values()
      assert all(type(x) is bool for x in want), want
      assert any(want) and not all(want), want
      v = li.import_capsule(t.__dlpack__())
      got = v.values()
      assert v.dtype == "bool"
      assert all(type(x) is bool for x in got), got
      assert got == want, (got, want)
      del v
      before = li.producer_stats()
      try:
          np.from_dlpack(t)
          raise AssertionError("NumPy 1.24 imported a bool tensor")
      except RuntimeError as e:
          assert "Unsupported dtype" in str(e), str(e)
      after = li.producer_stats()
      assert after["exports_live"] == before["exports_live"], (before, after)
      assert after["deleter_calls"] == before["deleter_calls"] + 1, (before, after)
      try:
          np.zeros(3, dtype=bool).__dlpack__()
          raise AssertionError("NumPy 1.24 exported a bool array")
      except BufferError:
          pass
  )PY"));
}

// ---- ownership --------------------------------------------------------------------------------------

// Scenario: the deleter runs exactly once per import: not at import, not when the tensor or the consumed
// capsule goes, once when the view goes — counted by the producer's ledger and by the consumer.
TEST_F(DlpackTest, DeleterRunsExactlyOnceWhenTheViewIsDropped) {
  ASSERT_TRUE(Run(R"PY(
      li.reset_ledger()
      p0, c0 = li.producer_stats(), li.consumer_stats()
      t = li.Tensor("float32", (4, 4), seed=8)
      cap = t.__dlpack__()
      v = li.import_capsule(cap)
      del t, cap
      gc.collect()
      p1, c1 = li.producer_stats(), li.consumer_stats()
      assert p1["deleter_calls"] == p0["deleter_calls"], (p0, p1)
      assert c1["deleter_calls"] == c0["deleter_calls"], (c0, c1)
      assert p1["storages_live"] == 1 and p1["bytes_live"] == 64, p1
      assert c1["imports"] == c0["imports"] + 1, (c0, c1)
      assert v.values() == li.expected_values("float32", 16, 8)
      del v
      gc.collect()
      p2, c2 = li.producer_stats(), li.consumer_stats()
      assert p2["deleter_calls"] == p0["deleter_calls"] + 1, (p0, p2)
      assert c2["deleter_calls"] == c0["deleter_calls"] + 1, (c0, c2)
      assert p2["storages_live"] == 0 and p2["exports_live"] == 0, p2
  )PY"));
}

// Scenario: a view and a buffer handle each keep the storage alive on their own after the tensor and the
// capsule are gone; it is released when the last of them goes, in either order.
TEST_F(DlpackTest, ViewAndBufferHandleKeepTheStorageAliveInEitherDropOrder) {
  for (bool view_first : {true, false}) {
    SCOPED_TRACE(view_first ? "view dropped first" : "buffer dropped first");
    PyDict_SetItemString(globals_.get(), "view_first", view_first ? Py_True : Py_False);
    ASSERT_TRUE(Run(R"PY(
        t = li.Tensor("int8", (5,), "offset", seed=11)
        want = t.values()
        v = li.import_capsule(t.__dlpack__())
        b = v.buffer()
        del t
        assert li.producer_stats()["storages_live"] == 1
        if view_first:
            del v
            assert li.producer_stats()["storages_live"] == 1, li.live_storages()
            assert li.consumer_stats()["buffers_live"] == 1
            d0 = li.producer_stats()["deleter_calls"]
            del b
        else:
            del b
            assert li.producer_stats()["storages_live"] == 1, li.live_storages()
            assert v.values() == want
            d0 = li.producer_stats()["deleter_calls"]
            del v
        p = li.producer_stats()
        assert p["storages_live"] == 0 and p["deleter_calls"] == d0 + 1, p
        assert li.consumer_stats()["buffers_live"] == 0
    )PY"));
  }
}

// Scenario: a view caught in a garbage cycle keeps its storage until the collector frees the cycle.
TEST_F(DlpackTest, ViewInAGarbageCycleIsReleasedByTheCollector) {
  ASSERT_TRUE(Run(R"PY(
      gc.disable()
      try:
          t = li.Tensor("float16", (2, 2), seed=2)
          cycle = [li.import_capsule(t.__dlpack__())]
          cycle.append(cycle)
          del t, cycle
          assert li.producer_stats()["storages_live"] == 1
          gc.collect()
          assert li.producer_stats()["storages_live"] == 0, li.live_storages()
      finally:
          gc.enable()
  )PY"));
}

// Scenario: import_from(t, contiguous=True) on a transposed tensor imports a temporary contiguous copy;
// the copy's storage lives exactly as long as the view, beside the original.
TEST_F(DlpackTest, ContiguousImportFromMakesATemporaryThatLivesAsLongAsTheView) {
  ASSERT_TRUE(Run(R"PY(
      t = li.Tensor("float32", (3, 4), "transposed", seed=12)
      assert not t.is_contiguous
      v = li.import_from(t, contiguous=True)
      assert li.producer_stats()["storages_live"] == 2, li.live_storages()
      assert v.values() == t.values(), (v.values(), t.values())
      assert v.shape == (3, 4)
      del v
      assert li.producer_stats()["storages_live"] == 1, li.live_storages()
      v = li.import_from(t)
      assert li.producer_stats()["storages_live"] == 1, li.live_storages()
      assert v.values() == t.values()
      del v
      c = li.Tensor("int8", (2, 3), seed=1)
      assert c.is_contiguous and c.contiguous() is c
      v = li.import_from(c, contiguous=True)
      assert li.producer_stats()["storages_live"] == 2, li.live_storages()
      del v, c
      assert li.producer_stats()["storages_live"] == 1, li.live_storages()
  )PY"));
}

// ---- bad input --------------------------------------------------------------------------------------

// Scenario: the Tensor constructor, __dlpack__ and import_capsule refuse bad arguments with the right
// exception type and a message that names the problem, and make nothing on the way.
TEST_F(DlpackTest, BadArgumentsRaiseTheRightExceptionWithAClearMessage) {
  struct Row {
    const char* code;
    const char* type;
    const char* message;
  };
  const Row rows[] = {
      {"li.Tensor('complex64', (2,))", "ValueError", "unknown dtype 'complex64'"},
      {"li.Tensor('float32', (2,), 'diagonal')", "ValueError", "unknown layout 'diagonal'"},
      {"li.Tensor('float32', (1, 1, 1, 1, 1))", "ValueError", "ndim 5 is above the producer's limit of 4"},
      {"li.Tensor('float32', (2, -1))", "ValueError", "shape[1] is negative"},
      {"li.Tensor('float32', (1024, 1024))", "ValueError", "more than 65536 elements"},
      {"li.Tensor('float32', 3)", "TypeError", "shape must be a sequence of ints"},
      {"li.Tensor('float32', (2,)).__dlpack__(stream=1)", "BufferError", "stream must be None"},
      {"li.import_capsule(42)", "TypeError", "import expects a DLPack capsule, got int"},
      {"li.malformed_capsule('bogus', li.Tensor('int8', (2, 2)))", "ValueError",
       "unknown malformed-capsule kind 'bogus'"},
      {"li.malformed_capsule('overflow', li.Tensor('int8', (2,)))", "ValueError", "ndim >= 2"},
      {"li.CapsuleHolder(42)", "TypeError", "must be PyCapsule, not int"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.code);
    PyDict_SetItemString(globals_.get(), "expected_type", Ref::Steal(PyUnicode_FromString(row.type)).get());
    PyDict_SetItemString(globals_.get(), "expected", Ref::Steal(PyUnicode_FromString(row.message)).get());
    ASSERT_TRUE(Run(std::string("try:\n    ") + row.code +
                    "\n    raise AssertionError('no exception')\n"
                    "except Exception as e:\n"
                    "    assert type(e).__name__ == expected_type, (type(e).__name__, str(e))\n"
                    "    assert expected in str(e), str(e)\n"));
    ASSERT_TRUE(Run(R"PY(
        p = li.producer_stats()
        assert p["storages_live"] == 0 and p["exports_live"] == 0, (p, li.live_storages())
    )PY"));
  }
}

}  // namespace
}  // namespace lifeline
