// Loads a page's heavy scripts once the page has loaded and what needs them comes near the
// screen (book/_ext/lean_pages.py). Each script tag of this file names its scripts (in order,
// data-scripts) and what they are for (data-near, a CSS selector; a page with none of it loads
// them right after loading):
// * MathJax, near the first formula; it typesets the whole page when it starts;
// * the widget manager of a lab with recorded ipywidgets (RequireJS, the offline glue and
//   html-manager's embed-amd.js), near the first widget; embed-amd.js renders the widgets as
//   soon as it runs on a loaded page. Each rendered control then gets an accessible name:
//   ipywidgets 8 gives a slider's handle (role "slider") none, so a screen reader would
//   announce a bare number; the widget's own visible description names it.
(function () {
  "use strict";
  var me = document.currentScript;
  var urls = JSON.parse((me && me.dataset.scripts) || "[]");
  var near = (me && me.dataset.near) || "";
  var started = false;

  // One load per script for the whole page: the widget manager's list starts with MathJax on
  // a page with math (the offline glue adapts the widgets to the MathJax that is there).
  var loaded = (window.__gpulabLazyLoaded = window.__gpulabLazyLoaded || {});

  function loadOne(url) {
    if (!loaded[url]) {
      loaded[url] = new Promise(function (done) {
        var script = document.createElement("script");
        script.src = url;
        script.onload = done;
        script.onerror = function () {
          console.warn("Could not load " + url + ": the page shows what was recorded");
          done();
        };
        document.head.appendChild(script);
      });
    }
    return loaded[url];
  }

  function load(i) {
    if (i < urls.length) loadOne(urls[i]).then(function () { load(i + 1); });
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
    if (me && me.dataset.widgets !== undefined) {
      new MutationObserver(function () { nameControls(document); })
        .observe(document.querySelector("main") || document.body, { childList: true, subtree: true });
    }
  }

  function watch() {
    if (!urls.length) return;
    var views = near ? document.querySelectorAll(near) : [];
    if (!views.length || !("IntersectionObserver" in window)) { start(); return; }
    var observer = new IntersectionObserver(function (entries) {
      if (entries.some(function (e) { return e.isIntersecting; })) {
        observer.disconnect();
        start();
      }
    }, { rootMargin: "100% 0px" });
    // A <script> has no box: watch what holds it.
    views.forEach(function (view) {
      observer.observe(view.tagName === "SCRIPT" ? view.parentElement : view);
    });
  }

  if (document.readyState === "complete") watch();
  else window.addEventListener("load", watch);
})();
