#version 450
// out[i] = a[i] * value, for i < n.
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) buffer A { float a[]; };
layout(std430, set = 0, binding = 1) buffer B { float b[]; };
layout(std430, set = 0, binding = 2) buffer Out { float o[]; };
layout(push_constant) uniform Args { uint n; float value; } args;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < args.n) o[i] = a[i] * args.value;
}
