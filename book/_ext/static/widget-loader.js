// Loads the widget manager of a lab page with recorded ipywidgets (book/_ext/lean_pages.py):
// RequireJS, the offline glue and html-manager's embed-amd.js, in that order, once the page
// has loaded and the first recorded widget comes near the screen. embed-amd.js renders the
// widgets as soon as it runs when the page has already loaded. Each rendered control then gets
// an accessible name: ipywidgets 8 gives a slider's handle (role "slider") none, so a screen
// reader would announce a bare number; the widget's own visible description names it.
(function () {
  "use strict";
  var me = document.currentScript;
  var urls = JSON.parse((me && me.dataset.scripts) || "[]");
  var started = false;

  function load(i) {
    if (i >= urls.length) return;
    var script = document.createElement("script");
    script.src = urls[i];
    script.onload = function () { load(i + 1); };
    script.onerror = function () { console.warn("Could not load " + urls[i] + ": widgets stay as recorded"); };
    document.head.appendChild(script);
  }

  function name(control) {
    if (control.getAttribute("aria-label") || control.getAttribute("aria-labelledby")) return;
    if (control.id && document.querySelector('label[for="' + control.id + '"]')) return;
    var widget = control.closest(".jupyter-widgets");
    var label = widget && widget.querySelector(".widget-label, .widget-label-basic");
    var text = label && label.textContent.trim();
    if (text) control.setAttribute("aria-label", text);
  }

  function nameControls(root) {
    root.querySelectorAll(
      '.jupyter-widgets [role="slider"], .jupyter-widgets input, .jupyter-widgets select, ' +
      ".jupyter-widgets textarea"
    ).forEach(name);
  }

  function start() {
    if (started) return;
    started = true;
    load(0);
    new MutationObserver(function () { nameControls(document); })
      .observe(document.querySelector("main") || document.body, { childList: true, subtree: true });
  }

  function watch() {
    var views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]');
    if (!views.length || !urls.length) return;
    if (!("IntersectionObserver" in window)) { start(); return; }
    var observer = new IntersectionObserver(function (entries) {
      if (entries.some(function (e) { return e.isIntersecting; })) {
        observer.disconnect();
        start();
      }
    }, { rootMargin: "600px 0px" });
    views.forEach(function (view) { observer.observe(view.parentElement); });
  }

  if (document.readyState === "complete") watch();
  else window.addEventListener("load", watch);
})();
