// The handoff program both the decoder's golden test and the executor tests use: every op kind.
#pragma once

#include <cstdint>

namespace lifeline::handoff {

// FuzzedDataProvider takes integers from the back and strings from the front: the strings "xyz" and
// "fr\0ab" lead, the op choices follow in reverse order of consumption.
inline constexpr uint8_t kEveryOpKind[] = {
    0x78, 0x79, 0x7a, 0x66, 0x72, 0x00, 0x61, 0x62, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x02, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x03, 0x02, 0x06, 0x01, 0x01, 0x01, 0x00, 0x05,
    0x00, 0x04, 0x01, 0x05, 0x00, 0x02, 0x00, 0x05, 0x02, 0x00, 0x03, 0x00, 0x01, 0x00, 0x03, 0x01, 0x01,
    0x02, 0x01, 0x03, 0x7c, 0x88, 0x02, 0x02, 0x00, 0x00, 0x02, 0x00, 0x00, 0x01, 0x00,
};

inline constexpr char kEveryOpKindProgram[] =
    "#0 bind multilingual -> slot 0\n"
    "#1 bind english-only -> slot 1\n"
    "#2 submit-async slot=0 lang=\"de\" (2 B, inline) audio=2 threads=3 translate -> sees \"de\" as job 1\n"
    "#3 submit-async slot=1 lang=\"xyz\" (3 B, inline) audio=0 threads=1 -> sees \"en\" as job 2\n"
    "#4 submit-sync slot=0 lang=\"fr\\x00ab\" (5 B, inline) audio=0 threads=2 -> sees \"fr\"\n"
    "#5 cancel job 2\n"
    "#6 start job 1\n"
    "#7 cancel job 1 -> FAILED_PRECONDITION\n"
    "#8 rebind slot=1 multilingual -> slot 1\n"
    "#9 join job 1\n"
    "#10 submit-async slot=3 lang=\"en\" (2 B, inline) audio=0 threads=1 -> NOT_FOUND\n"
    "#11 bind english-only -> slot 2\n"
    "#12 bind english-only -> slot 3\n"
    "#13 bind english-only -> RESOURCE_EXHAUSTED\n"
    "#14 submit-async slot=0 lang=\"\" (0 B, inline) audio=0 threads=0 -> INVALID_ARGUMENT\n";

}  // namespace lifeline::handoff
