// <emscripten.h> for compiling whisper.cpp's examples/whisper.wasm/emscripten.cpp natively (the embind
// stand-in: emscripten/bind.h beside this file). The file includes it and uses nothing from it.
#pragma once
