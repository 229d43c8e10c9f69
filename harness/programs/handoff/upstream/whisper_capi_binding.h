// The string-handoff programs on whisper.cpp's own C API (include/whisper.h of the pinned whisper.cpp), used
// across threads the way native bindings use it: one context per bound slot, and one whisper_state per job
// (whisper_init_state, whisper.cpp #523), so that several jobs of one slot run whisper_full_with_state on one
// context from several threads at once.
//
// What a job hands whisper, and for how long: whisper_full_params holds three C strings that whisper reads
// during the call and never copies: `language` (the program's bytes; "en" on an English-only model, as
// whisper.wasm's binding and whisper.cpp's examples pass it), `initial_prompt` (the same bytes, which whisper
// tokenizes) and `suppress_regex` (a regex matching exactly those bytes, each written \xHH; none for an empty
// string). The job owns them from submit until it is joined, as whisper.h asks of a caller.
//
// What whisper hands out, read within the lifetime whisper.h gives it: a state's segment texts and token
// texts (whisper_full_get_segment_text_from_state, whisper_full_get_token_text_from_state) are read on the
// caller's thread after the worker was joined and before the state is freed or run again, and copied; a
// segment's text must be the texts of its tokens below end-of-text, in order (how whisper_full builds it).
// whisper_lang_str's names are static: the name of the language a result used must name it back.
//
// The synchronous control runs whisper_full_parallel on the slot's context (its default state) on the calling
// thread, after joining the slot's workers (whisper.h: not thread safe on one context), with as many
// processors as the thread rule gives (whisper_caller.h).
//
// Guards, as in the whisper.wasm binding: whisper-full-empty-audio-uninit-mel (a state that never computed a
// spectrogram gets one silent frame before a call without samples; whisper_full_parallel's own fresh states
// cannot, so an empty clip goes to one processor), whisper-mel-short-audio-overread (clips padded to 201
// samples, and whisper_full_parallel's chunks kept at 201 or more).
#pragma once

#include <memory>

#include "core/status.h"
#include "harness/programs/handoff/binding.h"

struct whisper_context;
struct whisper_state;

namespace lifeline::handoff {

// Loads the models through WhisperModelPath (whisper_caller.h), one context per Init.
std::unique_ptr<JobBinding> MakeWhisperCApiBinding();

// The oracle of handed-out texts, on the result of the last whisper_full of `state` (nullptr: the context's
// default state): every segment and token text is readable, and each segment's text is its tokens' below
// end-of-text, in order.
Status CheckWhisperTexts(whisper_context* ctx, whisper_state* state);

}  // namespace lifeline::handoff
