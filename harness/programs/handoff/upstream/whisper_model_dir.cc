#include "harness/programs/handoff/upstream/whisper_wasm_binding.h"

namespace lifeline::handoff {

const char* BuiltWhisperModelDir() { return LIFELINE_WHISPER_MODEL_DIR; }

}  // namespace lifeline::handoff
