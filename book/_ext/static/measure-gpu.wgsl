// The "measure your GPU" panel's kernels (book/_ext/measure_gpu.py), in WGSL.
//
// One module per kernel, each after a line "//// name". The panel's worker
// (measure-gpu-worker.js) compiles them with WG, the workgroup size, chosen from the
// adapter's limits, and checks what each one wrote before its time counts. The FLOPs and
// bytes of each kernel are counted by the course's Python (gpulab/labkit/gpu_panel.py).

//// copy
// dst = src, 16 bytes per invocation; a 2-D grid when one row of workgroups is not enough.
override WG: u32 = 64;
@group(0) @binding(0) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * WG;
  if (i < arrayLength(&src)) {
    dst[i] = src[i];
  }
}

//// fma_f32
// 16 independent chains of fused multiply-adds per invocation (four vec4), each step
// x = fma(x, m, c). With m = 1 and c = 1 from the uniform (unknown to the compiler) chain j
// ends at j + iterations, exactly; the invocation writes the sum of its 16 chains.
override WG: u32 = 64;
struct Params { iterations: u32, m: f32, c: f32, pad: u32 }
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@group(0) @binding(1) var<uniform> p: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * WG;
  var a = vec4<f32>(0.0, 1.0, 2.0, 3.0);
  var b = a + vec4<f32>(4.0);
  var c = a + vec4<f32>(8.0);
  var d = a + vec4<f32>(12.0);
  let m = vec4<f32>(p.m);
  let k = vec4<f32>(p.c);
  for (var n = 0u; n < p.iterations; n = n + 1u) {
    a = fma(a, m, k);
    b = fma(b, m, k);
    c = fma(c, m, k);
    d = fma(d, m, k);
  }
  if (i < arrayLength(&out)) {
    let s = a + b + c + d;
    out[i] = s.x + s.y + s.z + s.w;
  }
}

//// fma_f16
// The same chains in half precision (needs the adapter's shader-f16). With m = -1 and c = 1
// each step maps x to 1 - x, exactly, so after an odd number of steps chain j, which started
// at j / 4, holds 1 - j / 4; the invocation writes the sum of its 16 chains as an f32.
enable f16;
override WG: u32 = 64;
struct Params { iterations: u32, m: f32, c: f32, pad: u32 }
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@group(0) @binding(1) var<uniform> p: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * WG;
  var a = vec4<f16>(0.0h, 0.25h, 0.5h, 0.75h);
  var b = a + vec4<f16>(1.0h);
  var c = a + vec4<f16>(2.0h);
  var d = a + vec4<f16>(3.0h);
  let m = vec4<f16>(f16(p.m));
  let k = vec4<f16>(f16(p.c));
  for (var n = 0u; n < p.iterations; n = n + 1u) {
    a = fma(a, m, k);
    b = fma(b, m, k);
    c = fma(c, m, k);
    d = fma(d, m, k);
  }
  if (i < arrayLength(&out)) {
    let s = vec4<f32>(a) + vec4<f32>(b) + vec4<f32>(c) + vec4<f32>(d);
    out[i] = s.x + s.y + s.z + s.w;
  }
}

//// matmul
// C = A B for n x n row-major f32 matrices (n a multiple of 16), in 16 x 16 tiles staged
// through workgroup memory: each element of A and B is read from memory n / 16 times.
const T: u32 = 16u;
struct Dims { n: u32, pad0: u32, pad1: u32, pad2: u32 }
@group(0) @binding(0) var<storage, read> A: array<f32>;
@group(0) @binding(1) var<storage, read> B: array<f32>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
@group(0) @binding(3) var<uniform> dims: Dims;
var<workgroup> tileA: array<f32, 256>;
var<workgroup> tileB: array<f32, 256>;

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  let n = dims.n;
  let row = wid.y * T + lid.y;
  let col = wid.x * T + lid.x;
  var acc = 0.0;
  for (var t = 0u; t < n; t = t + T) {
    tileA[lid.y * T + lid.x] = A[row * n + t + lid.x];
    tileB[lid.y * T + lid.x] = B[(t + lid.y) * n + col];
    workgroupBarrier();
    for (var k = 0u; k < T; k = k + 1u) {
      acc = fma(tileA[lid.y * T + k], tileB[k * T + lid.x], acc);
    }
    workgroupBarrier();
  }
  C[row * n + col] = acc;
}

//// dispatch
// Nothing: one workgroup that writes one word, to time the fixed cost of a dispatch.
@group(0) @binding(0) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(1)
fn main(@builtin(workgroup_id) wid: vec3<u32>) {
  out[0] = out[0] + 1u;
}
