// The embind stand-in's values (emscripten/bind.h): JavaScript semantics of the few operations
// whisper.wasm's emscripten.cpp performs, with the errors JavaScript would throw.
#include "harness/programs/handoff/upstream/embind/emscripten/bind.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace emscripten {
namespace internal {

std::map<std::string, std::any>& Registry() {
  static auto* registry = new std::map<std::string, std::any>();
  return *registry;
}

}  // namespace internal

val val::Float32Array(std::vector<float> elements) {
  val v;
  v.kind_ = Kind::kFloat32Array;
  v.length_ = elements.size();
  v.owned_ = std::make_shared<std::vector<float>>(std::move(elements));
  return v;
}

val val::module_property(const char* name) {
  if (std::strcmp(name, "HEAPU8") != 0) throw JsError(std::string("TypeError: the stand-in has no Module.") + name);
  val v;
  v.kind_ = Kind::kHeapU8;
  return v;
}

val val::operator[](const char* key) const {
  if (kind_ == Kind::kFloat32Array && std::strcmp(key, "length") == 0) return val(static_cast<double>(length_));
  if (kind_ == Kind::kFloat32Array && std::strcmp(key, "constructor") == 0) {
    val ctor;
    ctor.kind_ = Kind::kFloat32ArrayConstructor;
    return ctor;
  }
  if (kind_ == Kind::kHeapU8 && std::strcmp(key, "buffer") == 0) {
    val memory;
    memory.kind_ = Kind::kMemory;
    return memory;
  }
  // JavaScript answers undefined for a missing property; the stand-in refuses what it does not model.
  throw JsError(std::string("TypeError: the stand-in does not model property '") + key + "' of this value");
}

val val::Construct(const std::vector<val>& args) const {
  if (kind_ != Kind::kFloat32ArrayConstructor) throw JsError("TypeError: value is not a constructor");
  if (args.size() != 3 || args[0].kind_ != Kind::kMemory || args[1].kind_ != Kind::kNumber ||
      args[2].kind_ != Kind::kNumber) {
    throw JsError("TypeError: the stand-in constructs Float32Array(buffer, byteOffset, length) only");
  }
  const double offset = args[1].number_, length = args[2].number_;
  // The checks of the TypedArray constructor (ECMA-262 InitializeTypedArrayFromArrayBuffer).
  if (offset < 0 || offset != std::floor(offset) || std::fmod(offset, sizeof(float)) != 0) {
    throw JsError("RangeError: start offset of Float32Array should be a multiple of 4");
  }
  if (length < 0 || length != std::floor(length)) throw JsError("RangeError: invalid typed array length");
  val view;
  view.kind_ = Kind::kFloat32Array;
  view.view_ = reinterpret_cast<float*>(static_cast<uintptr_t>(offset));
  view.length_ = static_cast<size_t>(length);
  return view;
}

void val::Call(const char* name, const std::vector<val>& args) const {
  if (kind_ != Kind::kFloat32Array || std::strcmp(name, "set") != 0) {
    throw JsError(std::string("TypeError: the stand-in does not model method '") + name + "' of this value");
  }
  if (args.size() != 1 || args[0].kind_ != Kind::kFloat32Array) {
    throw JsError("TypeError: the stand-in's Float32Array.prototype.set takes one Float32Array");
  }
  const val& source = args[0];
  if (source.length_ > length_) throw JsError("RangeError: offset is out of bounds");
  if (source.length_ > 0) std::memmove(Data(), source.Data(), source.length_ * sizeof(float));
}

std::vector<float> val::Float32Elements() const {
  if (kind_ != Kind::kFloat32Array) throw JsError("TypeError: not a Float32Array");
  return std::vector<float>(Data(), Data() + length_);
}

}  // namespace emscripten
