// Written for gpulab (NOT from npm). Loaded on pages with ipywidgets, after require.js and
// before @jupyter-widgets/html-manager's embed-amd.js (see nb_ipywidgets_js in _config.yml).
(function () {
  "use strict";
  var here = document.currentScript && document.currentScript.src;
  if (here) {
    // embed-amd.js defines named AMD modules; webpack inside them finds its assets (the Font
    // Awesome fonts next to embed-amd.js) from each module's require.js URL, which by default is
    // relative to the *page* (404). Map the module names to the vendored folder instead, and set
    // the hook html-manager reads for the assets it loads later.
    var dir = new URL("../html-manager-1.0.6/", here).href;
    window.__jupyter_widgets_assets_path__ = dir;
    if (window.requirejs && typeof window.requirejs.config === "function") {
      window.requirejs.config({
        paths: {
          "@jupyter-widgets/base": dir + "base",
          "@jupyter-widgets/controls": dir + "controls",
          "@jupyter-widgets/html-manager": dir + "html-manager",
          "@jupyter-widgets/html-manager/dist/libembed-amd": dir + "libembed-amd",
        },
      });
    }
  }
  // @jupyter-widgets/base 6 typesets widget labels with the MathJax 2 call
  // MathJax.Hub.Queue(["Typeset", MathJax.Hub, element]), which throws under MathJax 3, and
  // also where MathJax is only configured (window.MathJax set) and not loaded yet: the pages
  // load it when the first formula nears the screen (book/_ext/static/lazy-loader.js). The
  // shim typesets the label with the MathJax 3 that is running; before MathJax starts, there
  // is nothing to do: it typesets the whole page, labels included, when it starts.
  function shimMathJax() {
    var mj = window.MathJax;
    if (!mj || mj.Hub) return;
    mj.Hub = {
      Queue: function () {
        Array.prototype.forEach.call(arguments, function (job) {
          var running = window.MathJax;
          if (!running || !running.version || typeof running.typesetPromise !== "function") return;
          if (Array.isArray(job) && job[0] === "Typeset" && job[2] instanceof Element) {
            var el = job[2];
            el.classList.add("mathjax_process");
            running.startup.promise
              .then(function () { return running.typesetPromise([el]); })
              .catch(function (err) { console.warn("MathJax could not typeset a widget label", err); });
          }
        });
      },
    };
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", shimMathJax);
  else shimMathJax();
})();
