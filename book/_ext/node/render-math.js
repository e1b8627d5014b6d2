// Typesets the formulas of built pages as SVG, once, when the book is built
// (book/_ext/math_svg.py runs it). A reader's browser then draws them with no script: no 1.3 MB
// of MathJax to download and run before the formulas stop showing as TeX.
//
//   node render-math.js PAGE.html ...
//
// Each Sphinx math node (<span class="math ...">\(...\)</span>, <div class="math ...">)
// keeps its element and gets MathJax's SVG output in place of its TeX, with the formula as
// MathML beside it for screen readers (MathJax's assistive MathML); a display formula keeps its
// TeX in data-tex. Glyph shapes are stored
// once per page (a hidden <svg> at the start of <body>) and MathJax's stylesheet goes in the
// page's head. A formula MathJax cannot read stops the run with its page and its TeX.
"use strict";

const fs = require("fs");
const { mathjax } = require("mathjax-full/js/mathjax.js");
const { TeX } = require("mathjax-full/js/input/tex.js");
const { SVG } = require("mathjax-full/js/output/svg.js");
const { liteAdaptor } = require("mathjax-full/js/adaptors/liteAdaptor.js");
const { RegisterHTMLHandler } = require("mathjax-full/js/handlers/html.js");
const { AssistiveMmlHandler } = require("mathjax-full/js/a11y/assistive-mml.js");
const { AllPackages } = require("mathjax-full/js/input/tex/AllPackages.js");

const MARK = "data-typeset";
const NODE = /<(span|div) class="math notranslate nohighlight"([^>]*)>([\s\S]*?)<\/\1>/g;
const ENTITIES = { "&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&#39;": "'", "&#x27;": "'" };

const adaptor = liteAdaptor();
AssistiveMmlHandler(RegisterHTMLHandler(adaptor));
const tex = new TeX({
  packages: AllPackages.filter((name) => name !== "bussproofs"),
  formatError: (jax, error) => { throw error; },
});
const svg = new SVG({ fontCache: "global" });
const doc = mathjax.document("", { InputJax: tex, OutputJax: svg });
const styles = adaptor.textContent(svg.styleSheet(doc));

function unescape(text) {
  return text.replace(/&(amp|lt|gt|quot|#39|#x27);/g, (entity) => ENTITIES[entity]);
}

function escapeAttribute(text) {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

// The TeX of a node's content, and whether it is a display formula.
function source(tag, content) {
  let text = unescape(content).trim();
  if (tag === "span") {
    const inline = /^\\\(([\s\S]*)\\\)$/.exec(text);
    return { text: inline ? inline[1] : text, display: false };
  }
  const display = /^\\\[([\s\S]*)\\\]$/.exec(text);
  return { text: display ? display[1] : text, display: true };
}

function typesetPage(path) {
  const page = fs.readFileSync(path, "utf8");
  if (page.includes(`${MARK}="svg"`) || !NODE.test(page)) return 0;
  NODE.lastIndex = 0;
  svg.clearFontCache();
  let count = 0;
  const out = page.replace(NODE, (whole, tag, attributes, content) => {
    const { text, display } = source(tag, content);
    let node;
    try {
      node = doc.convert(text, { display });
    } catch (error) {
      throw new Error(`${path}: MathJax cannot read the formula ${JSON.stringify(text)}: ${error.message}`);
    }
    count += 1;
    // A display formula keeps its TeX (the Chinese edition's check finds its message by it).
    const kept = display ? ` data-tex="${escapeAttribute(text)}"` : "";
    return `<${tag} class="math notranslate nohighlight"${attributes} ${MARK}="svg"${kept}>${adaptor.outerHTML(node)}</${tag}>`;
  });
  const cache = `<svg id="MJX-SVG-global-cache" xmlns="http://www.w3.org/2000/svg" style="display: none" aria-hidden="true">${adaptor.outerHTML(svg.fontCache.getCache())}</svg>`;
  const withCache = out.replace(/<body([^>]*)>/, (body) => `${body}\n${cache}`);
  const withStyles = withCache.replace("</head>", `<style id="MJX-SVG-styles">${styles}</style>\n</head>`);
  fs.writeFileSync(path, withStyles);
  return count;
}

let total = 0;
let pages = 0;
for (const path of process.argv.slice(2)) {
  const count = typesetPage(path);
  total += count;
  pages += count ? 1 : 0;
}
console.log(`typeset ${total} formulas on ${pages} pages`);
