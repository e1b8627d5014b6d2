/* "Predict, then check" questions (gpulab.labkit.selfcheck): checked in the page, no kernel.
 *
 * Each .gl-selfcheck carries its answer and tolerance in data- attributes, computed when the
 * book was built. A number counts as right when |typed - answer| <= tolerance, the tolerance
 * being absolute or a fraction of |answer| (the rule of SelfCheck.accepts in Python).
 * Without this script the question, hint and solution still read as text.
 */
(function () {
  "use strict";

  var SLACK = 1 + 1e-9; // the same slack as gpulab.labkit.selfcheck.ROUNDING_SLACK

  // "1,234.5", "1 234.5", "2.5e-3", "−3", "12 ms" (the question's unit) -> a number, or NaN.
  function parseNumber(raw, unit) {
    var s = String(raw).trim().replace(/\u2212/g, "-").replace(/[\u00a0\u202f_ ]/g, "");
    if (unit) {
      var u = unit.replace(/\s/g, "").toLowerCase();
      if (u && s.toLowerCase().endsWith(u)) s = s.slice(0, s.length - u.length);
    }
    s = s.replace(/%$/, "");
    if (/^[-+]?\d{1,3}(,\d{3})+(\.\d*)?$/.test(s)) s = s.replace(/,/g, "");
    else if (/^[-+]?\d*,\d+$/.test(s)) s = s.replace(",", ".");
    if (!/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(s)) return NaN;
    return parseFloat(s);
  }

  function format(x) {
    if (x === 0) return "0";
    var digits = Math.max(0, 2 - Math.floor(Math.log10(Math.abs(x))));
    return x.toLocaleString("en-US", { maximumFractionDigits: Math.min(digits, 12) });
  }

  function setup(box) {
    var form = box.querySelector(".gl-sc-form");
    var result = box.querySelector(".gl-sc-result");
    var hint = box.querySelector(".gl-sc-hint");
    if (!form || !result) return;
    form.hidden = false;
    box.querySelectorAll(".gl-sc-js-only").forEach(function (el) { el.hidden = false; });
    var nojs = box.querySelector(".gl-sc-nojs");
    if (nojs) nojs.hidden = true;
    box.classList.add("gl-sc-live");

    function show(ok, message) {
      box.classList.toggle("gl-sc-right", ok === true);
      box.classList.toggle("gl-sc-wrong", ok === false);
      result.textContent = message;
      if (ok === false && hint) {
        hint.open = true;
        var text = hint.querySelector("p");
        if (text) {
          result.textContent = say("with-hint", "{message} Hint: {hint}",
            { message: message, hint: text.textContent });
        }
      }
    }

    // A translated edition carries the replies in data-text-* attributes (templates with
    // {name} fields, gpulab.labkit.selfcheck.SCRIPT_TEXT); the English is the default.
    function say(key, english, fields) {
      var attr = "text" + key.replace(/-([a-z])/g, function (m, c) { return c.toUpperCase(); })
        .replace(/^./, function (c) { return c.toUpperCase(); });
      var text = box.dataset[attr] || english;
      return text.replace(/\{(\w+)\}/g, function (m, name) {
        return fields && name in fields ? fields[name] : m;
      });
    }

    function check() {
      var answer = box.dataset.answer;
      if (box.dataset.kind === "choice") {
        var picked = form.querySelector("input[type=radio]:checked");
        if (!picked) return show(null, say("pick", "Pick an answer first."));
        if (picked.value === answer) return show(true, say("right", "Right."));
        return show(false, say("wrong", "Not this one."));
      }
      var input = form.querySelector(".gl-sc-input");
      var unit = box.dataset.unit || "";
      var typed = parseNumber(input.value, unit);
      if (!isFinite(typed)) {
        input.setAttribute("aria-invalid", "true");
        var inUnit = unit ? say("in-unit", " (in {unit})", { unit: unit }) : "";
        return show(null, say("type", "Type a number{unit}, e.g. 12.5.", { unit: inUnit }));
      }
      input.removeAttribute("aria-invalid");
      var a = parseFloat(answer);
      var tol = parseFloat(box.dataset.tolerance);
      var allowed = box.dataset.toleranceKind === "relative" ? tol * Math.abs(a) : tol;
      var stated = box.dataset.toleranceKind === "relative"
        ? say("within-rel", "within {tolerance}%", { tolerance: format(100 * tol) })
        : say("within-abs", "within \u00b1 {tolerance}", {
          tolerance: format(tol) + (unit === "%" ? "%" : unit ? " " + unit : "")
        });
      var fields = { typed: format(typed), stated: stated };
      if (Math.abs(typed - a) <= allowed * SLACK) {
        return show(true, say("right-number", "Right: {typed} is {stated} of the answer.", fields));
      }
      if (typed > a) {
        return show(false, say("too-high", "Not quite: {typed} is too high (not {stated} of the " +
          "answer).", fields));
      }
      return show(false, say("too-low", "Not quite: {typed} is too low (not {stated} of the " +
        "answer).", fields));
    }

    form.addEventListener("submit", function (event) { event.preventDefault(); check(); });
    // Enter on a radio button submits too (text inputs submit on Enter by themselves).
    form.addEventListener("keydown", function (event) {
      if (event.key === "Enter" && event.target.type === "radio") {
        event.preventDefault();
        check();
      }
    });
  }

  function init() {
    document.querySelectorAll(".gl-selfcheck").forEach(setup);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
