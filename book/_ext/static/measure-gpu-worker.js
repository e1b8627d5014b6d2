// The "measure your GPU" panel's worker (book/_ext/measure_gpu.py): WebGPU and Python, off
// the page's main thread so the page stays responsive while it measures.
//
// On {type: "run"} it compiles the kernels of measure-gpu.wgsl on the reader's GPU, sizes
// each one from the adapter's limits, grows it until one dispatch lasts long enough to time,
// checks what it wrote, then times warm-up and measured blocks (GPU timestamps where the
// adapter offers "timestamp-query", else wall-clock time around the queue's completion). The
// raw times go to the course's Python (gpulab.labkit.gpu_panel, on Pyodide), which computes
// the rates, the roofline and its errors, and the report. Nothing leaves the page.
"use strict";

const MIN_DISPATCH_S = 1e-3; // grow a kernel until one dispatch lasts this long...
const MIN_BLOCK_S = 10e-3; // ...and time blocks of dispatches lasting at least this long
const WARMUP_BLOCKS = 2;
const TIMED_BLOCKS = 7;
const MAX_REPS = 64; // dispatches per block (GPU timestamps)
const MAX_REPS_WALL = 1024; // dispatches per block (wall clock, which must cover a round trip)
const ROUND_TRIPS = 10; // a wall-clock block lasts at least this many empty round trips
const COPY_CAP_BYTES = 256 * 2 ** 20;
const FMA_CAP_THREADS = 2 ** 20;
const FMA_CAP_ITERATIONS = 2 ** 16; // 16 * iterations + 120 stays exact in an f32
const MATMUL_CAP_N = 2048; // |C[i][j]| <= 2n stays exact in an f32

let options = {};
const post = (message) => self.postMessage(message);
const progress = (kernel, step) => post({ type: "progress", kernel, step });

function sections(source) {
  const out = {};
  let name = null;
  for (const line of source.split("\n")) {
    const head = line.match(/^\/\/\/\/ (\w+)\s*$/);
    if (head) {
      name = head[1];
      out[name] = "";
    } else if (name) out[name] += line + "\n";
  }
  return out;
}

function startPython(liveBase) {
  return (async () => {
    const { loadPyodide } = await import(new URL("pyodide/pyodide.mjs", liveBase).href);
    const py = await loadPyodide({ indexURL: new URL("pyodide/", liveBase).href });
    const response = await fetch(new URL("gpulab-live.zip", liveBase));
    if (!response.ok) throw new Error("gpulab-live.zip: HTTP " + response.status);
    py.unpackArchive(await response.arrayBuffer(), "zip", { extractDir: "/home/pyodide/live" });
    py.runPython(
      "import sys\nsys.path.insert(0, '/home/pyodide/live')\n" +
        "from gpulab.labkit.gpu_panel import panel_json\n"
    );
    return py.globals.get("panel_json");
  })();
}

// ---------------------------------------------------------------- timing

function makeTimer(device, timestamps) {
  if (!timestamps) return null;
  const set = device.createQuerySet({ type: "timestamp", count: 2 });
  const resolve = device.createBuffer({
    size: 16,
    usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC,
  });
  const read = device.createBuffer({
    size: 16,
    usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
  });
  return { set, resolve, read };
}

// Seconds per dispatch over one block of `reps` dispatches, each in its own compute pass.
async function timeBlock(device, encode, reps, timer) {
  const encoder = device.createCommandEncoder();
  for (let r = 0; r < reps; r++) {
    const writes = {};
    if (timer && r === 0) writes.beginningOfPassWriteIndex = 0;
    if (timer && r === reps - 1) writes.endOfPassWriteIndex = 1;
    const pass = encoder.beginComputePass(
      timer && (r === 0 || r === reps - 1)
        ? { timestampWrites: { querySet: timer.set, ...writes } }
        : undefined
    );
    encode(pass);
    pass.end();
  }
  if (timer) {
    encoder.resolveQuerySet(timer.set, 0, 2, timer.resolve, 0);
    encoder.copyBufferToBuffer(timer.resolve, 0, timer.read, 0, 16);
  }
  const start = performance.now();
  device.queue.submit([encoder.finish()]);
  await device.queue.onSubmittedWorkDone();
  const wall = (performance.now() - start) / 1e3 / reps;
  if (!timer) return wall;
  await timer.read.mapAsync(GPUMapMode.READ);
  const [begin, end] = new BigUint64Array(timer.read.getMappedRange().slice(0));
  timer.read.unmap();
  const gpu = Number(end - begin) / 1e9 / reps;
  // A zero or negative span is a quantized or reset counter: no GPU time for this block.
  return gpu > 0 ? gpu : null;
}

async function readBack(device, buffer, size) {
  const staging = device.createBuffer({
    size,
    usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
  });
  const encoder = device.createCommandEncoder();
  encoder.copyBufferToBuffer(buffer, 0, staging, 0, size);
  device.queue.submit([encoder.finish()]);
  await staging.mapAsync(GPUMapMode.READ);
  const copy = staging.getMappedRange().slice(0);
  staging.unmap();
  staging.destroy();
  return copy;
}

// Wall clock only: the median time to submit nothing and hear that the queue is done, which
// every wall-clock block includes once (blocks are made long enough to make it small).
async function roundTrip(device) {
  const times = [];
  for (let i = 0; i < 7; i++) {
    const start = performance.now();
    device.queue.submit([]);
    await device.queue.onSubmittedWorkDone();
    times.push((performance.now() - start) / 1e3);
  }
  return times.sort((x, y) => x - y)[3];
}

// Grow, check, warm up and time one kernel. `make(step)` returns the kernel at growth step
// `step` ({params, encode(pass), check() -> error text or null, destroy()}), or null past
// the largest size the adapter allows.
async function measure(device, timer, name, make, trip) {
  progress(name, "sizing");
  let step = 0;
  let kernel = make(step);
  // One dispatch's time (the least disturbed of three), less the round trip a wall-clock
  // time includes (0 with timestamps).
  const once = async () => {
    const times = [];
    for (let i = 0; i < 3; i++) times.push(await timeBlock(device, kernel.encode, 1, timer));
    const known = times.filter((t) => t !== null);
    return known.length ? Math.max(Math.min(...known) - trip, 1e-6) : null;
  };
  let single = await once(); // also compiles
  let error = await kernel.check();
  while (!error && (single === null || single < MIN_DISPATCH_S)) {
    const bigger = make(step + 1);
    if (!bigger) break;
    kernel.destroy();
    kernel = bigger;
    step += 1;
    single = await once();
    error = await kernel.check();
  }
  if (error) {
    kernel.destroy();
    return { name, params: kernel.params, checked: false, check: error, times_s: [] };
  }
  const block = Math.max(MIN_BLOCK_S, ROUND_TRIPS * trip);
  const most = timer ? MAX_REPS : MAX_REPS_WALL;
  // The empty dispatch has nothing to grow: its blocks hold as many dispatches as allowed.
  const wanted = name === "dispatch" ? most : Math.ceil(block / (single || block));
  const reps = Math.max(1, Math.min(most, wanted));
  progress(name, "timing");
  const times = [];
  let missing = 0;
  for (let b = 0; b < WARMUP_BLOCKS + TIMED_BLOCKS; b++) {
    const t = await timeBlock(device, kernel.encode, reps, timer);
    if (b < WARMUP_BLOCKS) continue;
    if (t === null) missing += 1;
    else times.push(t);
  }
  error = await kernel.check(); // still right after every timed dispatch
  kernel.destroy();
  return {
    name, params: kernel.params, checked: !error, check: error || "ok", times_s: error ? [] : times,
    dispatches_per_block: reps, warmup_blocks: WARMUP_BLOCKS, blocks_without_time: missing,
    round_trip_s: trip,
  }; // prettier-ignore
}

// ---------------------------------------------------------------- the kernels

function pipelineFor(device, code, constants) {
  const module = device.createShaderModule({ code });
  return device.createComputePipeline({
    layout: "auto",
    compute: { module, entryPoint: "main", constants },
  });
}

function grid(invocations, wg, maxPerDim) {
  const groups = Math.ceil(invocations / wg);
  const x = Math.min(groups, maxPerDim);
  return [x, Math.ceil(groups / x)];
}

function copyKernel(device, code, wg, limits) {
  const pipeline = pipelineFor(device, code, { WG: wg });
  const cap = Math.min(COPY_CAP_BYTES, limits.maxStorageBufferBindingSize, limits.maxBufferSize);
  return (step) => {
    const bytes = 2 ** 20 * 2 ** step;
    if (bytes > cap) return null;
    const words = bytes / 4;
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
    const src = device.createBuffer({ size: bytes, usage, mappedAtCreation: true });
    const fill = new Uint32Array(src.getMappedRange());
    for (let i = 0; i < words; i++) fill[i] = (i * 2654435761) >>> 0;
    src.unmap();
    const dst = device.createBuffer({ size: bytes, usage });
    const group = device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: [{ binding: 0, resource: { buffer: src } }, { binding: 1, resource: { buffer: dst } }],
    });
    const [gx, gy] = grid(words / 4, wg, limits.maxComputeWorkgroupsPerDimension);
    return {
      params: { bytes: 2 * bytes, buffer_bytes: bytes, workgroup_size: wg },
      encode(pass) {
        pass.setPipeline(pipeline);
        pass.setBindGroup(0, group);
        pass.dispatchWorkgroups(gx, gy);
      },
      async check() {
        const got = new Uint32Array(await readBack(device, dst, bytes));
        for (let i = 0; i < words; i++) {
          if (got[i] !== (i * 2654435761) >>> 0) return `word ${i} of the copy is wrong`;
        }
        return null;
      },
      destroy() {
        src.destroy();
        dst.destroy();
      },
    };
  };
}

function fmaKernel(device, code, wg, limits, dtype) {
  const pipeline = pipelineFor(device, code, { WG: wg });
  // f32: m = 1, c = 1 (chain j ends at j + iterations); f16: m = -1, c = 1 (x -> 1 - x).
  const [m, c] = dtype === "fp32" ? [1, 1] : [-1, 1];
  const maxThreads = Math.min(FMA_CAP_THREADS, limits.maxComputeWorkgroupsPerDimension * wg);
  return (step) => {
    // Threads first, from 4,096 up to 2^20 (enough to fill any GPU), then iterations.
    const threads = Math.min(maxThreads, 4096 * 2 ** step);
    const extra = Math.max(0, step - Math.log2(maxThreads / 4096));
    let iterations = 64 * 2 ** Math.ceil(extra);
    if (iterations > FMA_CAP_ITERATIONS) return null;
    if (dtype === "fp16") iterations += 1; // odd: every chain ends at 1 - its start
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC;
    const out = device.createBuffer({ size: threads * 4, usage });
    const uniform = device.createBuffer({
      size: 16,
      usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
    });
    const words = new ArrayBuffer(16);
    new Uint32Array(words, 0, 1)[0] = iterations;
    new Float32Array(words, 4, 2).set([m, c]);
    device.queue.writeBuffer(uniform, 0, words);
    const group = device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: [{ binding: 0, resource: { buffer: out } }, { binding: 1, resource: { buffer: uniform } }],
    });
    const [gx, gy] = grid(threads, wg, limits.maxComputeWorkgroupsPerDimension);
    // chains start at j (f32) or j / 4 (f16), j = 0..15
    const expected = dtype === "fp32" ? 120 + 16 * iterations : 16 - 30;
    return {
      params: { dtype, threads, iterations, chains: 16, workgroup_size: wg },
      encode(pass) {
        pass.setPipeline(pipeline);
        pass.setBindGroup(0, group);
        pass.dispatchWorkgroups(gx, gy);
      },
      async check() {
        const got = new Float32Array(await readBack(device, out, threads * 4));
        for (let i = 0; i < threads; i++) {
          if (got[i] !== expected) return `thread ${i} ended at ${got[i]}, not ${expected}`;
        }
        return null;
      },
      destroy() {
        out.destroy();
        uniform.destroy();
      },
    };
  };
}

function matmulKernel(device, code, limits) {
  const pipeline = pipelineFor(device, code, {});
  const fit = Math.floor(Math.sqrt(Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize) / 4) / 16) * 16;
  const cap = Math.min(MATMUL_CAP_N, fit, limits.maxComputeWorkgroupsPerDimension * 16);
  const a = (i, k) => ((i + k) % 3) - 1;
  const b = (k, j) => ((2 * k + j) % 5) - 2;
  return (step) => {
    const n = 64 * 2 ** step;
    if (n > cap) return null;
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
    const matrix = (value) => {
      const buffer = device.createBuffer({ size: n * n * 4, usage, mappedAtCreation: true });
      const view = new Float32Array(buffer.getMappedRange());
      for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) view[i * n + j] = value(i, j);
      buffer.unmap();
      return buffer;
    };
    const A = matrix(a);
    const B = matrix(b);
    const C = device.createBuffer({ size: n * n * 4, usage });
    const dims = device.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    device.queue.writeBuffer(dims, 0, new Uint32Array([n, 0, 0, 0]));
    const group = device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: [A, B, C, dims].map((buffer, binding) => ({ binding, resource: { buffer } })),
    });
    return {
      params: { n, dtype: "fp32", tile: 16 },
      encode(pass) {
        pass.setPipeline(pipeline);
        pass.setBindGroup(0, group);
        pass.dispatchWorkgroups(n / 16, n / 16);
      },
      async check() {
        // Every product is a small integer, so every entry is exact: check a whole row and
        // a whole column for each of 8 rows and columns spread over the matrix.
        const got = new Float32Array(await readBack(device, C, n * n * 4));
        for (let s = 0; s < 8; s++) {
          const line = Math.floor((s * (n - 1)) / 7);
          for (let t = 0; t < n; t++) {
            for (const [i, j] of [[line, t], [t, line]]) {
              let want = 0;
              for (let k = 0; k < n; k++) want += a(i, k) * b(k, j);
              if (got[i * n + j] !== want) return `C[${i}][${j}] = ${got[i * n + j]}, not ${want}`;
            }
          }
        }
        return null;
      },
      destroy() {
        [A, B, C, dims].forEach((buffer) => buffer.destroy());
      },
    };
  };
}

function dispatchKernel(device, code) {
  const pipeline = pipelineFor(device, code, {});
  return (step) => {
    if (step > 0) return null; // nothing to grow: more dispatches per block instead
    const counter = device.createBuffer({
      size: 4,
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC,
    });
    const group = device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: [{ binding: 0, resource: { buffer: counter } }],
    });
    let dispatched = 0;
    return {
      params: { workgroups: 1, workgroup_size: 1 },
      encode(pass) {
        pass.setPipeline(pipeline);
        pass.setBindGroup(0, group);
        pass.dispatchWorkgroups(1);
        dispatched += 1;
      },
      async check() {
        const got = new Uint32Array(await readBack(device, counter, 4))[0];
        return got === dispatched ? null : `${got} of ${dispatched} dispatches ran`;
      },
      destroy() {
        counter.destroy();
      },
    };
  };
}

// ---------------------------------------------------------------- the run

const LIMIT_NAMES = [
  "maxStorageBufferBindingSize", "maxBufferSize", "maxComputeWorkgroupSizeX",
  "maxComputeInvocationsPerWorkgroup", "maxComputeWorkgroupsPerDimension",
]; // prettier-ignore

async function run(message) {
  const began = performance.now();
  options = message.options || {};
  const gpu = self.navigator && self.navigator.gpu;
  if (!gpu) return post({ type: "unavailable", reason: "noWebGPU" });
  const adapter = await gpu.requestAdapter({ powerPreference: "high-performance" });
  if (!adapter) return post({ type: "unavailable", reason: "noAdapter" });
  // Python starts while the kernels run (it is needed only for the result).
  const python = startPython(new URL(message.liveBase));
  python.catch(() => {}); // reported below, once the kernels are done
  const offered = [...adapter.features];
  const timestamps = offered.includes("timestamp-query") && options.timing !== "wall-clock";
  const f16 = offered.includes("shader-f16");
  const limits = {};
  LIMIT_NAMES.forEach((name) => (limits[name] = adapter.limits[name]));
  const device = await adapter.requestDevice({
    requiredFeatures: [...(timestamps ? ["timestamp-query"] : []), ...(f16 ? ["shader-f16"] : [])],
    requiredLimits: { ...limits },
  });
  let lost = null;
  device.lost.then((info) => (lost = info.message || info.reason));
  const info = adapter.info || {};
  const timer = makeTimer(device, timestamps);
  const code = sections(await (await fetch(new URL("measure-gpu.wgsl", message.staticBase))).text());
  const wg = Math.min(256, limits.maxComputeWorkgroupSizeX, limits.maxComputeInvocationsPerWorkgroup);
  const trip = timer ? 0 : await roundTrip(device);
  const plan = [
    ["copy", () => copyKernel(device, code.copy, wg, limits)],
    ["fma_f32", () => fmaKernel(device, code.fma_f32, wg, limits, "fp32")],
    ["fma_f16", f16 ? () => fmaKernel(device, code.fma_f16, wg, limits, "fp16") : null],
    ["matmul", () => matmulKernel(device, code.matmul, limits)],
    ["dispatch", () => dispatchKernel(device, code.dispatch)],
  ];
  const kernels = [];
  const skipped = [];
  for (const [name, build] of plan) {
    if (!build) {
      skipped.push({ name, reason: "the adapter does not offer shader-f16" });
      continue;
    }
    try {
      // A kernel this browser cannot compile is skipped with the compiler's words.
      device.pushErrorScope("validation");
      const make = build();
      const invalid = await device.popErrorScope();
      if (invalid) {
        skipped.push({ name, reason: "it does not compile here: " + invalid.message });
        continue;
      }
      kernels.push(await measure(device, timer, name, make, trip));
    } catch (err) {
      skipped.push({ name, reason: String((err && err.message) || err) });
    }
    if (lost) break;
  }
  device.destroy();
  const kernelsDone = performance.now();
  const measurement = {
    adapter: {
      vendor: info.vendor || "", architecture: info.architecture || "",
      description: info.description || "", device: info.device || "",
    },
    browser: self.navigator.userAgent,
    date: new Date().toISOString().slice(0, 10),
    timing: timestamps ? "timestamp-query" : "wall-clock",
    round_trip_s: trip,
    features: offered.sort(),
    limits,
    kernels,
    skipped,
  }; // prettier-ignore
  progress("python", "starting");
  let panelJson;
  try {
    panelJson = await python;
  } catch (err) {
    return post({ type: "pythonFailed", error: String(err), measurement });
  }
  // How long the parts took, in seconds (for the book's tests; not part of the result).
  measurement.elapsed_s = {
    kernels: (kernelsDone - began) / 1e3, python_wait: (performance.now() - kernelsDone) / 1e3,
  }; // prettier-ignore
  const out = JSON.parse(panelJson(JSON.stringify(measurement)));
  post({ type: "done", measurement, result: out });
}

self.onmessage = (event) => {
  if (event.data && event.data.type === "run") {
    run(event.data).catch((err) => post({ type: "failed", error: String((err && err.message) || err) }));
  }
};
