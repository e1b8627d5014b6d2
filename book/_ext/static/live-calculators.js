// Live calculators (book/_ext/live_calculators.py): the course's own Python, run in the page.
//
// Nothing is loaded until the reader first touches a calculator. Then Pyodide (copied beside
// the HTML by the build, in _static/live/pyodide/) starts, the zip of the gpulab package the
// build made is unpacked, and every change of an input runs
// gpulab.labkit.calculators.run(name, values) and shows the HTML it returns.
(function () {
  "use strict";
  const base = new URL("live/", document.currentScript.src);
  // What to say, by situation: the page writes it on each form (data-text-*), in the
  // edition's language (book/_ext/live_calculators.py, SCRIPT_TEXT).
  function say(calc, key, error) {
    const text = calc.dataset["text" + key[0].toUpperCase() + key.slice(1)] || key;
    return text.replace("{error}", String(error));
  }
  const timings = { touch: null, firstResultMs: null, updatesMs: [] };
  let runtime = null; // a promise of the Python function run_json(name, values_json)

  function status(calc, text) {
    calc.querySelector(".gl-calc-status").textContent = text;
  }

  function startPython() {
    if (runtime) return runtime;
    runtime = (async () => {
      const { loadPyodide } = await import(new URL("pyodide/pyodide.mjs", base).href);
      const py = await loadPyodide({ indexURL: new URL("pyodide/", base).href });
      const response = await fetch(new URL("gpulab-live.zip", base));
      if (!response.ok) throw new Error("gpulab-live.zip: HTTP " + response.status);
      py.unpackArchive(await response.arrayBuffer(), "zip", { extractDir: "/home/pyodide/live" });
      py.runPython(
        "import sys, json\n" +
          "sys.path.insert(0, '/home/pyodide/live')\n" +
          "from gpulab.labkit.calculators import run\n" +
          "def run_json(name, values):\n" +
          "    return json.dumps(run(name, values))\n"
      );
      return py.globals.get("run_json");
    })();
    return runtime;
  }

  function values(calc) {
    const out = {};
    calc.querySelectorAll("select, input").forEach((el) => {
      out[el.name] = el.value;
    });
    return out;
  }

  async function compute(calc) {
    const result = calc.querySelector(".gl-calc-result");
    let runJson;
    try {
      if (!runtime) status(calc, say(calc, "starting"));
      runJson = await startPython();
    } catch (err) {
      status(calc, say(calc, "failed", err));
      return;
    }
    const asked = values(calc);
    const start = performance.now();
    const out = JSON.parse(runJson(calc.dataset.calculator, JSON.stringify(asked)));
    result.innerHTML = out.html;
    const now = performance.now();
    if (timings.firstResultMs === null && timings.touch !== null) {
      timings.firstResultMs = now - timings.touch;
    } else {
      timings.updatesMs.push(now - start);
    }
    result.removeAttribute("data-build-result");
    calc.dataset.computed = String(Number(calc.dataset.computed || 0) + 1);
    calc.dataset.values = JSON.stringify(asked);
    calc.dataset.numbers = JSON.stringify(out.numbers);
    status(calc, say(calc, "ready"));
  }

  // One computation at a time per calculator, always on the latest inputs.
  function schedule(calc) {
    if (calc._busy) {
      calc._again = true;
      return;
    }
    calc._busy = true;
    compute(calc).finally(() => {
      calc._busy = false;
      if (calc._again) {
        calc._again = false;
        schedule(calc);
      }
    });
  }

  function touched() {
    if (timings.touch === null) timings.touch = performance.now();
    startPython().catch(() => {}); // reported by compute()
  }

  function setUp(calc) {
    if (typeof WebAssembly !== "object") {
      status(calc, say(calc, "noWasm"));
      return;
    }
    // A page opened from disk may not import modules or fetch files (its origin is null).
    if (window.location.protocol === "file:") {
      status(calc, say(calc, "fromFile"));
      return;
    }
    calc.querySelectorAll("select, input").forEach((el) => {
      el.disabled = false;
    });
    status(calc, say(calc, "ready"));
    calc.addEventListener("pointerdown", touched);
    calc.addEventListener("focusin", touched);
    calc.addEventListener("input", (event) => {
      const output = calc.querySelector('output[for="' + event.target.id + '"]');
      if (output) output.textContent = event.target.value;
      schedule(calc);
    });
  }

  function init() {
    document.querySelectorAll(".gl-calc[data-calculator]").forEach(setUp);
  }

  // For the book's tests: start Python, and run a calculator on given inputs.
  window.gpulabLive = {
    timings,
    ready: () => startPython().then(() => true),
    run: async (name, asked) => JSON.parse((await startPython())(name, JSON.stringify(asked))),
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
