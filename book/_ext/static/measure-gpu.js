// The "measure your GPU" panel (book/_ext/measure_gpu.py), on the page's main thread.
//
// Nothing runs until the reader presses the button. Then measure-gpu-worker.js runs the
// kernels and the course's Python in a worker; this script only shows what it sends: the
// step it is on, the result (HTML computed by gpulab.labkit.gpu_panel), a link to download
// the report, or, when the panel cannot measure, one sentence and the lab recording.
(function () {
  "use strict";
  const script = document.currentScript.src;
  const base = new URL("./", script); // _static/

  function say(panel, key, fill) {
    const text = panel.dataset["text" + key[0].toUpperCase() + key.slice(1)] || key;
    return text.replace(/\{(\w+)\}/g, (whole, name) => (name in (fill || {}) ? fill[name] : whole));
  }
  function kernelName(panel, key) {
    const data = "kernel" + key.split("_").map((p) => p[0].toUpperCase() + p.slice(1)).join("");
    return panel.dataset[data] || key;
  }
  function status(panel, text) {
    panel.querySelector(".gl-gpu-status").textContent = text;
  }
  function fallBack(panel, key, fill) {
    status(panel, say(panel, key, fill));
    panel.querySelector(".gl-gpu-recorded").hidden = false;
    panel.querySelector(".gl-gpu-run").disabled = true;
    panel.dataset.state = "fallback";
    panel.dataset.reason = key;
  }

  function measure(panel) {
    const button = panel.querySelector(".gl-gpu-run");
    button.disabled = true;
    panel.dataset.state = "running";
    const worker = new Worker(new URL("measure-gpu-worker.js", base), { type: "module" });
    worker.onerror = (event) => {
      fallBack(panel, "failed", { error: event.message || "the worker did not start" });
      worker.terminate();
    };
    worker.onmessage = (event) => {
      const message = event.data;
      if (message.type === "progress") {
        const key = message.kernel === "python" ? "python" : "running";
        status(panel, say(panel, key, { kernel: kernelName(panel, message.kernel) }));
        return;
      }
      worker.terminate();
      if (message.type === "unavailable") return fallBack(panel, message.reason);
      if (message.type === "failed") return fallBack(panel, "failed", { error: message.error });
      if (message.type === "pythonFailed") {
        status(panel, say(panel, "pythonFailed", { error: message.error }));
        panel.dataset.state = "python-failed";
        button.disabled = false;
        return;
      }
      const result = message.result;
      panel.querySelector(".gl-gpu-result").innerHTML = result.html;
      const blob = new Blob([JSON.stringify(result.report, null, 1)], { type: "application/json" });
      const holder = panel.querySelector(".gl-gpu-download");
      let link = holder.querySelector("a");
      if (!link) {
        link = document.createElement("a");
        link.textContent = holder.dataset.label;
        holder.appendChild(link);
      }
      if (link.href) URL.revokeObjectURL(link.href);
      link.href = URL.createObjectURL(blob);
      link.download = `webgpu-${result.report.provenance.date}.json`;
      link.parentElement.hidden = false;
      panel.dataset.numbers = JSON.stringify(result.numbers);
      panel.dataset.measurement = JSON.stringify(message.measurement);
      status(panel, say(panel, "done"));
      panel.dataset.state = "done";
      button.disabled = false;
    };
    worker.postMessage({
      type: "run",
      liveBase: new URL("live/", base).href,
      staticBase: base.href,
      options: window.gpulabMeasure.options,
    });
  }

  function setUp(panel) {
    // A page opened from disk may not start a module worker or fetch files.
    if (window.location.protocol === "file:") return fallBack(panel, "fromFile");
    if (!("gpu" in navigator) || typeof Worker !== "function") return fallBack(panel, "noWebGPU");
    panel.querySelector(".gl-gpu-recorded").hidden = true;
    const button = panel.querySelector(".gl-gpu-run");
    button.disabled = false;
    button.addEventListener("click", () => measure(panel));
    status(panel, say(panel, "ready"));
    panel.dataset.state = "ready";
  }

  // For the book's tests: options passed to the worker ({timing: "wall-clock"} forces the
  // wall-clock path on an adapter that offers timestamps).
  window.gpulabMeasure = { options: {} };
  function init() {
    document.querySelectorAll(".gl-gpu[data-measure-gpu]").forEach(setUp);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
