#!/usr/bin/python3
# Writes a tiny, deterministic whisper.cpp model so that the whisper tests can run whisper_full without
# downloading a real model.
#
#   scripts/make-whisper-model.py OUT_PATH     write the model to OUT_PATH (through OUT_PATH.tmp and a rename)
#                                              and print one line with its size
#
# What the file is
#   A model in the legacy ggml "ggml-*.bin" format, the one that whisper_model_load() in whisper.cpp 1.9.1
#   (src/whisper.cpp) reads through whisper_init_from_file_with_params / whisper_init_from_buffer_with_params.
#   Every field is little-endian; nothing is padded or aligned:
#     uint32  magic 0x67676d6c ("ggml")
#     int32 x 11  hparams, in this order: n_vocab, n_audio_ctx, n_audio_state, n_audio_head, n_audio_layer,
#                 n_text_ctx, n_text_state, n_text_head, n_text_layer, n_mels, ftype
#     int32 n_mel, int32 n_fft, float32[n_mel * n_fft]      mel filter bank, row j = filter of mel band j
#     int32 n_tokens, then n_tokens times: uint32 len, len bytes    the text vocabulary (ids 0 .. n_tokens-1)
#     tensors until the end of the file, each: int32 n_dims, int32 name_len, int32 type (0 = f32, 1 = f16),
#                 int32 ne[n_dims] (ggml order: the fastest-moving dimension first), the name, the data
#   The loader wants exactly the tensors it creates for the hparams (11 + 15 per encoder layer + 24 per
#   decoder layer of them, by name), each with the shape and type it expects; conv, linear and token
#   embedding weights are f16 (ftype 1), positional embeddings, biases and layer norms f32.
#
# The sizes, and why
#   n_vocab 51865 makes the model multilingual (whisper_is_multilingual: n_vocab >= 51865). The loader derives
#   every special id from n_vocab: eot 50257, sot 50258, the 99 language tokens 50259..50357 (en = 50259),
#   translate 50358, transcribe 50359, solm 50360, prev 50361, nosp 50362, notimestamps 50363, timestamp
#   begin 50364 and the timestamps 50365..51864. Like the converted OpenAI models, the file lists only the
#   50257 text tokens; the loader names the other 1608 itself ("[_EOT_]", "[_LANG_en]", "[_TT_50]", ...).
#   Token 50256 is the empty string, as in the real multilingual files; token 220 must be " " because greedy
#   decoding with suppress_blank looks it up with std::map::at.
#   n_audio_state = n_text_state = 8 (the loader needs the two equal), 2 heads of 4, one encoder and one
#   decoder layer: the token embedding (51865 x 8 f16, 0.8 MB) is most of the file either way, and every
#   decoding step multiplies by it.
#   n_audio_ctx 1: the encoder takes 2 * n_audio_ctx mel frames per 30 s window (its second convolution has
#   stride 2) and its positional embedding has n_audio_ctx rows; whisper_full with its default parameters does
#   not need 1500, and 1 is the smallest value the loader and whisper_full accept. The encoder is then a handful
#   of tiny operations: whisper_full on 1 s of audio takes about 15 ms on one thread here, against about 185 ms
#   with n_audio_ctx 1500. Two things do depend on it: whisper_full_params.audio_ctx must be <= n_audio_ctx
#   (whisper_full returns -5 otherwise), and DTW token timestamps (a context parameter that also needs
#   flash_attn off) assert n_frames <= 2 * n_audio_ctx, which this model meets for no n_audio_ctx below 1500
#   (with timestamps its segments are 100 frames long, so 50 would do for those; with no_timestamps a window
#   is up to 3000 frames).
#   n_text_ctx 32: whisper_full decodes at most n_text_ctx/2 - 4 tokens per window and keeps at most
#   n_text_ctx/2 tokens of history in the prompt; 32 leaves 12 steps for a 6-step transcript. whisper_init_state
#   sizes the decoder for a batch of n_text_ctx tokens, whose logits alone are n_text_ctx x n_vocab floats:
#   6.6 MB at 32 (8.2 MB decoder compute buffer in all), 93 MB at the usual 448.
#   n_text_layer 1, not 2: whisper_full treats a 2-layer decoder as a distilled model and forces no_timestamps.
#   n_mels 80 and n_fft 201 (= 1 + 400/2, the FFT bins the mel code assumes; the spectrogram takes its band
#   count from the filters, and the encoder wants it equal to n_mels): triangular filters on the Slaney mel
#   scale over 0..8000 Hz, area-normalised, like the ones the real models carry.
#
# The weights
#   Small uniform random numbers from random.Random(20261127) (only rng.random(), whose stream is fixed for a
#   seeded Random), except for a few decoder weights shaped by hand so that greedy decoding is confident and
#   short: random weights give near-uniform logits over 51865 tokens (log-probability about -10.9), which
#   fails logprob_thold and sends whisper_full through all six temperatures, five decoders each, up to the
#   end of the context. Instead the decoder is a little state machine over 8 one-hot "codes":
#     * the scripted tokens' embedding rows are M * e_code (M = 10); every other row is random, |x| <= 0.1;
#     * the first 8 MLP units each detect one code at the MLP's layer-norm input and write S * e_next - M *
#       e_code into the residual stream (S = 20), which turns the current token's code into the next one's;
#     * the final layer norm maps that to about 2.6 on the next code and -0.4 on the others, plus a bias of 2 on
#       the EOT code; the logits (the tied token embedding times that vector) are then about 26 for the next
#       token, 16 for EOT, -4 for the other scripted tokens and within +-1 for the random rest (whose 51855
#       rows add up to about 11 in log-sum-exp), so the next token has a probability above 0.9999;
#     * attention weights stay random but small, so audio reaches the logits only as noise.
#   The transitions: transcribe/translate -> timestamp begin -> " hello" -> " world" -> "." -> [_TT_50]
#   (1.00 s) -> EOT; notimestamps leads to " hello" as well, sot to the "en" token (language detection).
#   So whisper_full on any audio of 100 ms or more yields one segment " hello world." per 30 s window at
#   temperature 0 with no fallback; with no_timestamps the timestamps are masked and EOT (probability 0.995)
#   comes right after ".".
#
# Floating point: only IEEE-754 operations that round the same everywhere (+ - * / sqrt) and struct's f16/f32
# packing are used, so the same bytes come out on any machine.
import argparse
import math
import os
import random
import struct
import sys

SEED = 20261127

# hparams (written in this order after the magic)
N_VOCAB = 51865
N_AUDIO_CTX = 1
N_STATE = 8
N_HEAD = 2
N_AUDIO_LAYER = 1
N_TEXT_CTX = 32
N_TEXT_LAYER = 1
N_MELS = 80
FTYPE = 1  # GGML_FTYPE_MOSTLY_F16

N_FFT = 201  # 1 + WHISPER_N_FFT/2
SAMPLE_RATE = 16000
N_TEXT_TOKENS = 50257  # ids 0..50256 are written; the loader adds the special tokens up to N_VOCAB

GGML_MAGIC = 0x67676D6C
T_F32 = 0
T_F16 = 1

# special token ids as whisper_model_load derives them for N_VOCAB = 51865 (multilingual); an English-only
# model (--english: N_VOCAB 51864, the vocabulary of the ".en" models) has each of them one lower and lists
# 50256 text tokens (set_english below)
TOK_EOT = 50257
TOK_SOT = 50258
TOK_LANG_EN = 50259
TOK_TRANSLATE = 50358
TOK_TRANSCRIBE = 50359
TOK_NOT = 50363
TOK_BEG = 50364
TS_END = 50  # "[_TT_50]": 50 * 20 ms = 1.00 s

# the scripted text tokens (ids as in the GPT-2 byte-level vocabulary)
TOK_SPACE = 220
TEXT_SCRIPT = [(23748, b" hello"), (995, b" world"), (13, b".")]

# decoder codes: each scripted token's embedding is M along one of the N_STATE axes
C_EOT, C_BEG, C_W1, C_W2, C_W3, C_TEND, C_TASK, C_SOT = range(8)


def token_codes():
    """Token id -> decoder code, for the special ids of the model being written."""
    codes = {
        TOK_EOT: C_EOT,
        TOK_BEG: C_BEG,
        TOK_NOT: C_BEG,  # notimestamps continues like timestamp begin: with " hello"
        TEXT_SCRIPT[0][0]: C_W1,
        TEXT_SCRIPT[1][0]: C_W2,
        TEXT_SCRIPT[2][0]: C_W3,
        TOK_BEG + TS_END: C_TEND,
        TOK_TRANSCRIBE: C_TASK,
        TOK_TRANSLATE: C_TASK,
        TOK_SOT: C_SOT,
    }
    if N_VOCAB >= 51865:
        codes[TOK_LANG_EN] = C_SOT  # the output of sot: language detection picks "en"
    else:
        codes[TOK_SOT] = C_TASK  # an English-only prompt is sot alone (no language, no task): then timestamp begin
    return codes


def set_english():
    """The English-only variant: whisper_is_multilingual is false below 51865 tokens, the loader's special ids
    are its defaults (one lower than the multilingual ones), and there are no language tokens."""
    global N_VOCAB, N_TEXT_TOKENS, TOK_EOT, TOK_SOT, TOK_TRANSLATE, TOK_TRANSCRIBE, TOK_NOT, TOK_BEG
    N_VOCAB, N_TEXT_TOKENS = 51864, 50256
    TOK_EOT, TOK_SOT, TOK_TRANSLATE, TOK_TRANSCRIBE, TOK_NOT, TOK_BEG = 50256, 50257, 50357, 50358, 50362, 50363


# code of the current token -> code of the next one
NEXT_CODE = {
    C_TASK: C_BEG,
    C_BEG: C_W1,
    C_W1: C_W2,
    C_W2: C_W3,
    C_W3: C_TEND,
    C_TEND: C_EOT,
    C_EOT: C_EOT,
    C_SOT: C_SOT,
}
EMBD_SCALE = 10.0  # M
MLP_OUT_SCALE = 20.0  # S
DETECT_GAIN = 6.0
DETECT_THRESHOLD = 1.1  # a layer-normed one-hot is sqrt(7) = 2.65 on its axis and -0.38 elsewhere
EOT_BIAS = 2.0

assert N_STATE >= len(NEXT_CODE) and 4 * N_STATE >= len(NEXT_CODE)


class Rng:
    """Uniform numbers from a seeded random.Random, using only random(), whose stream is stable."""

    def __init__(self, seed):
        self.r = random.Random(seed)

    def uniform(self, a):
        return (2.0 * self.r.random() - 1.0) * a

    def below(self, n):
        return int(self.r.random() * n)

    def vec(self, n, a):
        return [self.uniform(a) for _ in range(n)]


def gpt2_byte_order():
    """The 256 single-byte tokens in the order of the GPT-2 byte-level vocabulary (so 13 is '.', 220 is ' ')."""
    printable = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    rest = [b for b in range(256) if b not in printable]
    return [bytes([b]) for b in printable + rest]


def text_vocabulary(rng):
    tokens = gpt2_byte_order()
    fixed = dict(TEXT_SCRIPT)
    assert tokens[TOK_SPACE] == b" " and tokens[13] == b"."
    seen = set(tokens) | set(fixed.values()) | {b""}
    onsets = [b"", b"b", b"c", b"d", b"f", b"g", b"h", b"j", b"k", b"l", b"m", b"n", b"p", b"r", b"s", b"t",
              b"v", b"w", b"z", b"br", b"ch", b"cl", b"dr", b"fr", b"gr", b"pl", b"pr", b"sh", b"st", b"th",
              b"tr", b"wh"]
    vowels = [b"a", b"e", b"i", b"o", b"u", b"ea", b"ou", b"y"]
    codas = [b"", b"", b"", b"n", b"r", b"s", b"t", b"l", b"m", b"d", b"ng", b"st", b"ck"]
    while len(tokens) < N_TEXT_TOKENS - 1:
        i = len(tokens)
        if i in fixed:
            tokens.append(fixed[i])
            continue
        word = b""
        for _ in range(1 + rng.below(3)):
            word += onsets[rng.below(len(onsets))] + vowels[rng.below(len(vowels))] + codas[rng.below(len(codas))]
        roll = rng.r.random()
        if roll < 0.08:
            word = word[:1].upper() + word[1:]
        if roll < 0.6:
            word = b" " + word
        elif roll > 0.97:
            word = word + b"," if roll < 0.985 else word + b"'s"
        if word not in seen:
            seen.add(word)
            tokens.append(word)
    if len(tokens) < N_TEXT_TOKENS:
        tokens.append(b"")  # id 50256: the empty token of the real multilingual vocabularies
    assert len(tokens) == N_TEXT_TOKENS
    for tid, s in TEXT_SCRIPT:
        assert tokens[tid] == s
    return tokens


def mel_filters():
    """80 triangular filters over 201 FFT bins on the Slaney mel scale (linear up to 1 kHz, logarithmic above),
    each scaled to unit area (2 / width); returns the 80 rows concatenated. The 82 band edges are equally
    spaced in mel from 0 to 8000 Hz; the constants below are that scale's values for 80 bands, so that only
    multiplications and divisions are needed: 26 linear steps of 37.239... Hz, then from 1005.645... Hz on a
    ratio of 1.0391508... per band."""
    n_edges = N_MELS + 2
    lin_step = 37.23921026495882
    n_lin = 27  # edges 0..26 lie below 1000 Hz
    geo_first = 1005.6452812331256
    ratio = 1.0391508907068487
    edges = []
    f = 0.0
    for i in range(n_edges):
        if i < n_lin:
            f = i * lin_step
        elif i == n_lin:
            f = geo_first
        else:
            f = f * ratio
        edges.append(f)
    edges[-1] = SAMPLE_RATE / 2.0
    bin_hz = (SAMPLE_RATE / 2.0) / (N_FFT - 1)
    data = []
    for m in range(N_MELS):
        lo, mid, hi = edges[m], edges[m + 1], edges[m + 2]
        norm = 2.0 / (hi - lo)
        for k in range(N_FFT):
            fk = k * bin_hz
            w = min((fk - lo) / (mid - lo), (hi - fk) / (hi - mid))
            data.append(w * norm if w > 0.0 else 0.0)
    return data


class Writer:
    def __init__(self):
        self.parts = []
        self.n_tensors = 0

    def raw(self, b):
        self.parts.append(b)

    def ints(self, *v):
        self.parts.append(struct.pack("<%di" % len(v), *v))

    def tensor(self, name, ne, values, ttype):
        n = 1
        for d in ne:
            n *= d
        assert len(values) == n, (name, len(values), n)
        nb = name.encode()
        self.ints(len(ne), len(nb), ttype)
        self.ints(*ne)
        self.raw(nb)
        self.raw(struct.pack("<%d%s" % (n, "e" if ttype == T_F16 else "f"), *values))
        self.n_tensors += 1

    def data(self):
        return b"".join(self.parts)


def onehot(n, i, v=1.0):
    x = [0.0] * n
    x[i] = v
    return x


def write_block(w, rng, prefix, cross, a_qkv, a_out, a_mlp0, a_mlp1, mlp=None):
    """One transformer block: attention (and, in the decoder, cross-attention) and an MLP.
    `mlp` = (w0, b0, w1, b1) replaces the random MLP weights."""
    D = N_STATE
    F = 4 * D
    WT = T_F16 if FTYPE == 1 else T_F32
    attns = ["attn"] + (["cross_attn"] if cross else [])
    for a in attns:
        w.tensor("%s.%s_ln.weight" % (prefix, a), [D], [1.0] * D, T_F32)
        w.tensor("%s.%s_ln.bias" % (prefix, a), [D], [0.0] * D, T_F32)
        w.tensor("%s.%s.query.weight" % (prefix, a), [D, D], rng.vec(D * D, a_qkv), WT)
        w.tensor("%s.%s.query.bias" % (prefix, a), [D], rng.vec(D, 0.02), T_F32)
        w.tensor("%s.%s.key.weight" % (prefix, a), [D, D], rng.vec(D * D, a_qkv), WT)
        w.tensor("%s.%s.value.weight" % (prefix, a), [D, D], rng.vec(D * D, a_qkv), WT)
        w.tensor("%s.%s.value.bias" % (prefix, a), [D], rng.vec(D, 0.02), T_F32)
        w.tensor("%s.%s.out.weight" % (prefix, a), [D, D], rng.vec(D * D, a_out), WT)
        w.tensor("%s.%s.out.bias" % (prefix, a), [D], rng.vec(D, 0.01), T_F32)
    w.tensor("%s.mlp_ln.weight" % prefix, [D], [1.0] * D, T_F32)
    w.tensor("%s.mlp_ln.bias" % prefix, [D], [0.0] * D, T_F32)
    if mlp is None:
        mlp = (rng.vec(F * D, a_mlp0), rng.vec(F, 0.02), rng.vec(D * F, a_mlp1), rng.vec(D, 0.01))
    w0, b0, w1, b1 = mlp
    w.tensor("%s.mlp.0.weight" % prefix, [D, F], w0, WT)  # F rows of D
    w.tensor("%s.mlp.0.bias" % prefix, [F], b0, T_F32)
    w.tensor("%s.mlp.2.weight" % prefix, [F, D], w1, WT)  # D rows of F
    w.tensor("%s.mlp.2.bias" % prefix, [D], b1, T_F32)


def decoder_mlp(rng):
    """The hand-made part of the decoder: unit j < 8 fires on code j and rewrites it into NEXT_CODE[j]."""
    D = N_STATE
    F = 4 * D
    w0 = rng.vec(F * D, 0.1)  # row u = weights of hidden unit u
    b0 = [0.0] * F
    w1 = rng.vec(D * F, 0.02)  # row i = weights into residual dimension i
    b1 = [0.0] * D
    active = DETECT_GAIN * (math.sqrt(D - 1) - DETECT_THRESHOLD)  # pre-activation of a firing unit (GELU ~ identity)
    for c, nxt in NEXT_CODE.items():
        u = c
        w0[u * D:(u + 1) * D] = onehot(D, c, DETECT_GAIN)
        b0[u] = -DETECT_GAIN * DETECT_THRESHOLD
        col = [0.0] * D
        col[nxt] += MLP_OUT_SCALE / active
        col[c] -= EMBD_SCALE / active
        for i in range(D):
            w1[i * F + u] = col[i]
    return w0, b0, w1, b1


def build(rng):
    D = N_STATE
    WT = T_F16 if FTYPE == 1 else T_F32
    w = Writer()

    w.raw(struct.pack("<I", GGML_MAGIC))
    w.ints(N_VOCAB, N_AUDIO_CTX, N_STATE, N_HEAD, N_AUDIO_LAYER,
           N_TEXT_CTX, N_STATE, N_HEAD, N_TEXT_LAYER, N_MELS, FTYPE)

    w.ints(N_MELS, N_FFT)
    filt = mel_filters()
    w.raw(struct.pack("<%df" % len(filt), *filt))

    tokens = text_vocabulary(rng)
    w.ints(len(tokens))
    for t in tokens:
        w.raw(struct.pack("<I", len(t)) + t)

    # encoder
    w.tensor("encoder.positional_embedding", [D, N_AUDIO_CTX], rng.vec(D * N_AUDIO_CTX, 0.1), T_F32)
    w.tensor("encoder.conv1.weight", [3, N_MELS, D], rng.vec(3 * N_MELS * D, 0.05), WT)
    w.tensor("encoder.conv1.bias", [1, D], rng.vec(D, 0.02), T_F32)
    w.tensor("encoder.conv2.weight", [3, D, D], rng.vec(3 * D * D, 0.2), WT)
    w.tensor("encoder.conv2.bias", [1, D], rng.vec(D, 0.02), T_F32)
    for il in range(N_AUDIO_LAYER):
        write_block(w, rng, "encoder.blocks.%d" % il, False, 0.35, 0.35, 0.35, 0.18)
    w.tensor("encoder.ln_post.weight", [D], [1.0] * D, T_F32)
    w.tensor("encoder.ln_post.bias", [D], [0.0] * D, T_F32)

    # decoder
    w.tensor("decoder.positional_embedding", [D, N_TEXT_CTX], rng.vec(D * N_TEXT_CTX, 0.02), T_F32)
    embd = rng.vec(N_VOCAB * D, 0.1)
    for tok, code in token_codes().items():
        embd[tok * D:(tok + 1) * D] = onehot(D, code, EMBD_SCALE)
    w.tensor("decoder.token_embedding.weight", [D, N_VOCAB], embd, WT)
    for il in range(N_TEXT_LAYER):
        # attention stays random but small next to the codes (M = 10): audio shows up as noise only
        mlp = decoder_mlp(rng) if il == N_TEXT_LAYER - 1 else None
        write_block(w, rng, "decoder.blocks.%d" % il, True, 0.3, 0.02, 0.1, 0.02, mlp)
    w.tensor("decoder.ln.weight", [D], [1.0] * D, T_F32)
    w.tensor("decoder.ln.bias", [D], onehot(D, C_EOT, EOT_BIAS), T_F32)

    n_expected = 11 + 15 * N_AUDIO_LAYER + 24 * N_TEXT_LAYER  # the tensors whisper_model_load creates
    assert w.n_tensors == n_expected, (w.n_tensors, n_expected)
    return w.data()


def main(argv):
    ap = argparse.ArgumentParser(
        prog="make-whisper-model.py",
        description="Write a tiny deterministic whisper.cpp 1.9.1 model (legacy ggml format) to OUT_PATH.")
    ap.add_argument("out_path", metavar="OUT_PATH", help="where to write the model (through OUT_PATH.tmp)")
    ap.add_argument("--english", action="store_true",
                    help="an English-only model (51864 tokens: whisper_is_multilingual is false)")
    args = ap.parse_args(argv)
    if args.english:
        set_english()

    out = args.out_path
    if not out or out.endswith(os.sep) or os.path.isdir(out):
        ap.error("OUT_PATH must name a file, got %r" % out)
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        ap.error("the directory of OUT_PATH does not exist: %s" % parent)

    data = build(Rng(SEED))
    tmp = out + ".tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, out)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        print("make-whisper-model.py: cannot write %s: %s" % (out, e), file=sys.stderr)
        return 1
    print("%s: %d bytes" % (out, len(data)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
