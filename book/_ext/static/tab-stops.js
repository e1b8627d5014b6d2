// Tab stops for scrollable blocks inside a <details> when the reader opens it
// (book/_ext/tab_stops.py). The theme gives each code block, output and table that scrolls
// sideways a tab stop when the page loads, so that a keyboard can scroll it; the book's copy of
// the theme leaves closed <details> out of that, and this does the same for their content once
// it is shown: focusable when it scrolls, not a tab stop when it does not.
(function () {
  "use strict";
  var SCROLLABLE = "pre, .nboutput > .output_area, .cell_output > .output, " +
    ".jp-RenderedHTMLCommon, .pst-scrollable-table-container";

  function scrolls(element) {
    return element.scrollWidth > element.clientWidth || element.scrollHeight > element.clientHeight;
  }

  function update(details) {
    var blocks = Array.prototype.filter.call(details.querySelectorAll(SCROLLABLE), function (el) {
      return !el.closest("details:not([open])");
    });
    var stops = blocks.map(function (el) { return scrolls(el) ? 0 : -1; }); // read, then write
    blocks.forEach(function (el, i) { if (el.tabIndex !== stops[i]) el.tabIndex = stops[i]; });
  }

  // "toggle" does not bubble: listen in the capture phase.
  document.addEventListener("toggle", function (event) {
    if (event.target.open) update(event.target);
  }, true);
})();
