// <emscripten/bind.h>, the JavaScript side of embind, small enough to compile whisper.cpp's
// examples/whisper.wasm/emscripten.cpp unmodified as native code and call its functions the way JavaScript
// calls them through embind. Only what that file uses is here:
//   EMSCRIPTEN_BINDINGS(name) { ... }        runs the block once, at static initialization (as embind does)
//   emscripten::function(name, f)            registers f under name (internal::Lookup finds it)
//   emscripten::optional_override(lambda)    the lambda itself
//   emscripten::val                          the JavaScript values the file touches: a Float32Array (audio),
//                                            its "length" and "constructor", Module.HEAPU8 and its "buffer"
//                                            (the wasm memory: natively, the address space), new
//                                            Float32Array(buffer, byteOffset, length) over it, and .set().
// JavaScript errors (RangeError, TypeError) are thrown as emscripten::JsError, which the caller's side
// (harness/programs/handoff/upstream/whisper_wasm_binding.cc) catches at the call boundary.
// Embind's argument lifetimes are the caller's business: embind builds a C++ argument (a std::string from a
// JS string) in its invoker's frame for the call and destroys it when the call returns; the harness does the
// same in its own call frames.
#pragma once

#include <any>
#include <cstddef>
#include <cstdint>
#include <cstring>  // emscripten.cpp calls strdup and includes no header of its own for it: embind's brings it
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace emscripten {

// A JavaScript exception thrown by an operation on a val (its message starts with the JS error's name).
class JsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class val {
 public:
  // A Float32Array owning a copy of `elements` (what a JS caller passes as audio).
  static val Float32Array(std::vector<float> elements);
  // Module[name]: "HEAPU8", the byte view of the wasm memory (natively: of the whole address space).
  static val module_property(const char* name);

  val() = default;
  explicit val(double number) : kind_(Kind::kNumber), number_(number) {}

  // obj[key]: "length" and "constructor" of a Float32Array, "buffer" of HEAPU8.
  val operator[](const char* key) const;
  template <typename T>
  T as() const {
    static_assert(std::is_arithmetic_v<T>, "the stand-in converts numbers only");
    if (kind_ != Kind::kNumber) throw JsError("TypeError: the stand-in converts only numbers with as<T>()");
    return static_cast<T>(number_);
  }
  // new ctor(args...): new Float32Array(buffer, byteOffset, length).
  template <typename... Args>
  val new_(Args&&... args) const {
    return Construct({Arg(std::forward<Args>(args))...});
  }
  // obj.name(args...): Float32Array.prototype.set(source).
  template <typename R, typename... Args>
  R call(const char* name, Args&&... args) const {
    static_assert(std::is_void_v<R>, "the stand-in's methods return nothing");
    Call(name, {Arg(std::forward<Args>(args))...});
  }

  // The elements of a Float32Array (for the caller's checks).
  std::vector<float> Float32Elements() const;

 private:
  enum class Kind { kUndefined, kNumber, kFloat32Array, kFloat32ArrayConstructor, kHeapU8, kMemory };

  static val Arg(const val& v) { return v; }
  template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<std::decay_t<T>>>>
  static val Arg(T number) {
    return val(static_cast<double>(number));
  }
  val Construct(const std::vector<val>& args) const;
  void Call(const char* name, const std::vector<val>& args) const;
  float* Data() const { return owned_ ? owned_->data() : view_; }

  Kind kind_ = Kind::kUndefined;
  double number_ = 0.0;
  std::shared_ptr<std::vector<float>> owned_;  // a Float32Array with a buffer of its own
  float* view_ = nullptr;                      // a Float32Array over the wasm memory
  size_t length_ = 0;
};

template <typename F>
F optional_override(F&& f) {
  return std::forward<F>(f);
}

namespace internal {

// What EMSCRIPTEN_BINDINGS registered: name -> std::function<Signature> (in a std::any).
std::map<std::string, std::any>& Registry();

template <typename T>
struct Signature;
template <typename C, typename R, typename... A>
struct Signature<R (C::*)(A...) const> {
  using type = R(A...);
};

// The function registered as `name`, with the signature the caller expects.
template <typename Sig>
const std::function<Sig>& Lookup(const std::string& name) {
  auto it = Registry().find(name);
  if (it == Registry().end()) throw JsError("TypeError: Module." + name + " is not a function");
  const auto* fn = std::any_cast<std::function<Sig>>(&it->second);
  if (fn == nullptr) throw std::logic_error("Module." + name + " is registered with another signature");
  return *fn;
}

struct InitFunc {
  explicit InitFunc(void (*init)()) { init(); }
};

}  // namespace internal

// Registers a non-capturing lambda (or any callable with one call operator) under `name`.
template <typename F>
void function(const char* name, F f) {
  using Sig = typename internal::Signature<decltype(&F::operator())>::type;
  internal::Registry()[name] = std::function<Sig>(std::move(f));
}

}  // namespace emscripten

#define EMSCRIPTEN_BINDINGS(name)                                                                 \
  static void lifeline_embind_init_##name();                                                      \
  static const ::emscripten::internal::InitFunc lifeline_embind_registrar_##name(                 \
      &lifeline_embind_init_##name);                                                              \
  static void lifeline_embind_init_##name()
