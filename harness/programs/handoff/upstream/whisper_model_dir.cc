#include "harness/programs/handoff/upstream/whisper_caller.h"

namespace lifeline::handoff {

const char* BuiltWhisperModelDir() { return LIFELINE_WHISPER_MODEL_DIR; }

}  // namespace lifeline::handoff
