// The browser check: open every page of the built book in headless
// Chromium, the way a reader's browser renders it, and report what a
// reader would see go wrong. `cargo xtask test` runs it (crates/xtask/src/
// browser.rs) after the build and its static checks; it needs
// `playwright-core` from package.json (`npm ci`) and Debian's chromium.
//
//   node check.mjs --book DIR --screenshots DIR --chromium PATH
//                  [--must-find TERM]... [--find-if-present TERM]...
//
// It serves DIR on a port of 127.0.0.1 chosen by the system, stops the
// server when done, and prints one line per problem starting with
// "problem: ". Exit status 1 if there were any, 2 if it could not run.

import { chromium } from 'playwright-core';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

const THEMES = ['light', 'rust', 'coal', 'navy', 'ayu'];
// Figures are photographed in these (all five are measured for contrast):
// light, the darkest, and mdBook's default dark theme.
const PICTURE_THEMES = ['light', 'coal', 'navy'];
// mdBook's own default for readers whose system prefers dark.
const DARK = 'navy';
// WCAG 2 AA contrast for normal-size text.
const MIN_CONTRAST = 4.5;
// The widths a page is laid out at: a desktop window and a phone. Nothing
// may be cut at either (content hidden with no way to scroll to it).
const DESKTOP = 1280;
const PHONE = 420;
// The smallest text in a figure, in CSS px as the page shows it at the
// desktop width and 100% zoom. Unicode superscripts (the exponents of log
// axes, "10⁻³") are drawn smaller than the digits they follow, so text
// holding them is measured at SUPERSCRIPT of its size (as
// crates/figures/src/style.rs draws it).
const MIN_FIGURE_TEXT_PX = 12;
const SUPERSCRIPT = 0.8;
// The same on a phone, at PHONE px wide: the figures' phone drawings
// (crates/figures draws each figure for the desktop and for a phone).
const MIN_PHONE_FIGURE_TEXT_PX = 11;
// mdBook's menu bar sticks to the top of the window and would cover the
// top of a tall figure in its picture.
const HIDE_MENU_BAR = '#mdbook-menu-bar, #mdbook-menu-bar-hover-placeholder { visibility: hidden !important; }';
// The flags that let Debian's chromium run as root in a container with no
// network: no sandbox, and none of the background connections a closed
// network refuses.
const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

function parseArgs(argv) {
  const opts = { mustFind: [], findIfPresent: [] };
  for (let i = 0; i < argv.length; i += 2) {
    const [key, value] = [argv[i], argv[i + 1]];
    if (value === undefined) usage(`${key} needs a value`);
    switch (key) {
      case '--book': opts.book = path.resolve(value); break;
      case '--screenshots': opts.screenshots = path.resolve(value); break;
      case '--chromium': opts.chromium = value; break;
      case '--must-find': opts.mustFind.push(value); break;
      case '--find-if-present': opts.findIfPresent.push(value); break;
      case '--record': opts.record = path.resolve(value); break;
      default: usage(`unknown argument ${key}`);
    }
  }
  if (!opts.book || !opts.screenshots || !opts.chromium) {
    usage('--book, --screenshots and --chromium are required');
  }
  return opts;
}

function usage(why) {
  console.error(`check.mjs: ${why}`);
  process.exit(2);
}

const opts = parseArgs(process.argv.slice(2));
const started = Date.now();
const problems = [];
const problem = (where, what) => problems.push(`${where}: ${what}`);

// ---------------------------------------------------------------- server

const TYPES = {
  '.html': 'text/html; charset=utf-8', '.css': 'text/css', '.js': 'text/javascript',
  '.json': 'application/json', '.svg': 'image/svg+xml', '.png': 'image/png',
  '.woff2': 'font/woff2', '.woff': 'font/woff', '.ttf': 'font/ttf', '.txt': 'text/plain',
};

function serve(root) {
  const server = http.createServer((req, res) => {
    let rel;
    try {
      rel = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    } catch {
      res.writeHead(400).end();
      return;
    }
    let file = path.join(root, rel);
    if (file !== root && !file.startsWith(root + path.sep)) {
      res.writeHead(403).end();
      return;
    }
    if (fs.existsSync(file) && fs.statSync(file).isDirectory()) {
      file = path.join(file, 'index.html');
    }
    if (!fs.existsSync(file)) {
      // Like GitHub Pages: status 404 with the book's 404 page.
      const notFound = path.join(root, '404.html');
      res.writeHead(404, { 'content-type': TYPES['.html'] });
      res.end(fs.existsSync(notFound) ? fs.readFileSync(notFound) : '');
      return;
    }
    const type = TYPES[path.extname(file)] || 'application/octet-stream';
    res.writeHead(200, { 'content-type': type });
    res.end(fs.readFileSync(file));
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}

// ---------------------------------------------------------------- pages

// Chromium cannot capture a page much taller than this in one picture
// (the claims appendix is several times taller): a longer page is
// photographed from its top down to this height.
const MAX_SHOT_PX = 16000;

async function shoot(page, file) {
  const [width, height] = await page.evaluate(() => [
    document.documentElement.scrollWidth, document.documentElement.scrollHeight,
  ]);
  const clip = { x: 0, y: 0, width, height: Math.min(height, MAX_SHOT_PX) };
  await page.screenshot({ path: file, fullPage: true, clip });
}

function htmlPages(root) {
  const out = [];
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      // rustdoc's source view (rustdoc/) is linked to, not a page of the book.
      if (entry.isDirectory()) { if (path.relative(root, full) !== 'rustdoc') walk(full); }
      else if (entry.name.endsWith('.html')) out.push(path.relative(root, full).split(path.sep).join('/'));
    }
  };
  walk(root);
  return out.sort();
}

// Pages that are not chapters: mdBook's 404 page, the print page (all
// chapters in one), the table of contents for readers without JavaScript,
// and index.html, a copy of the first chapter.
const NOT_CHAPTERS = new Set(['404.html', 'print.html', 'toc.html', 'index.html']);

function shotName(rel, suffix) {
  return `${rel.replace(/\.html$/, '').replace(/[/\\]/g, '_')}-${suffix}.png`;
}

// One browser tab, reused for every page (a new tab per page costs more
// than the page). `tab.errors` collects console errors, uncaught
// exceptions and failed requests since the last `open`.
async function newTab(context, origin) {
  const page = await context.newPage();
  const tab = { page, errors: [] };
  const short = (url) => url.replace(origin + '/', '');
  page.on('console', (msg) => {
    // A failed request also logs "Failed to load resource"; the response
    // handler below reports it with its URL.
    if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource')) {
      tab.errors.push(`console error: ${msg.text()}`);
    }
  });
  page.on('pageerror', (e) => tab.errors.push(`uncaught exception: ${e.message}`));
  page.on('requestfailed', (r) => {
    // ERR_ABORTED: the tab moved on to the next page before this finished
    // loading (a favicon, say); nothing a reader would see.
    const why = r.failure()?.errorText || '';
    if (!why.includes('ERR_ABORTED')) tab.errors.push(`request failed: ${short(r.url())} (${why})`);
  });
  page.on('response', (r) => {
    if (r.status() >= 400) tab.errors.push(`HTTP ${r.status()} for ${short(r.url())}`);
  });
  // The book must read with the network off: anything it asks of another
  // host (a CDN's stylesheet, a web font, an image) is reported, whether
  // or not this machine could reach it.
  page.on('request', (r) => {
    const url = new URL(r.url());
    if (['http:', 'https:', 'ws:', 'wss:'].includes(url.protocol) && url.origin !== origin) {
      tab.errors.push(`request leaves the book: ${r.url()}`);
    }
  });
  // Never let the print page's window.print() or anything else block.
  await page.addInitScript(() => { window.print = () => {}; });
  return tab;
}

// Show `rel` in the tab with every collapsible answer opened (a figure or
// formula in an answer is checked as the reader who opens it sees it) and
// its fonts loaded; returns the errors it caused.
async function open(tab, origin, rel) {
  tab.errors = [];
  await tab.page.emulateMedia({ media: 'screen' });
  await tab.page.goto(`${origin}/${rel}`, { waitUntil: 'load' });
  await tab.page.evaluate(() => {
    for (const d of document.querySelectorAll('main details')) d.open = true;
    return document.fonts.ready.then(() => undefined);
  });
  return tab.errors;
}

// Everything about one rendered page that the checks need; runs inside the
// page.
function inspect({ minText, superscript, width }) {
  const problems = [];
  const main = document.querySelector('main');
  const clip = (s) => s.replace(/\s+/g, ' ').trim().slice(0, 70);

  // A repository or edit icon (any link) to a placeholder account: the
  // build gives them only a real address, from BOOK_REPOSITORY.
  for (const a of document.querySelectorAll('a[href]')) {
    const host = (a.href.split('://')[1] || '').split(/[/.]/);
    if (host.some((p) => ['OWNER', 'USER', 'USERNAME', 'owner'].includes(p))) {
      problems.push(`a link to a placeholder address: ${a.href}`);
      break;
    }
  }

  // Raw math: TeX delimiters or commands left in the text a reader sees.
  const skip = 'pre, code, script, style, textarea, noscript, .katex';
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const raw = /\$\$|\\\(|\\\[|\\[a-zA-Z]+\s*[{_^]/;
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (raw.test(node.nodeValue) && !node.parentElement.closest(skip)) {
      problems.push(`raw math left unrendered: "${clip(node.nodeValue)}"`);
    }
  }

  // Math that parsed but lost a command on the way in: an escape that
  // turned "\top" into a TAB and "op", "\frac" into a form feed and "rac".
  // KaTeX keeps the TeX source in an <annotation>; look there.
  for (const tex of document.querySelectorAll('.katex annotation')) {
    const source = tex.textContent;
    const bad = source.match(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]([a-zA-Z]*)/u);
    if (bad) {
      const code = bad[0].codePointAt(0).toString(16).toUpperCase().padStart(4, '0');
      problems.push(`math holds a broken command: U+${code} before "${bad[1]}" in "${clip(source)}"`);
    }
  }

  // KaTeX: no error spans; its stylesheet and fonts in use.
  const errors = document.querySelectorAll('.katex-error');
  if (errors.length > 0) {
    problems.push(`${errors.length} KaTeX error(s) (class katex-error), first: "${clip(errors[0].textContent)}"`);
  }
  const formulas = main ? main.querySelectorAll('.katex') : [];
  if (formulas.length > 0) {
    const family = getComputedStyle(formulas[0]).fontFamily;
    if (!family.includes('KaTeX_Main')) {
      problems.push(`math is not styled by KaTeX's stylesheet (font-family: ${family})`);
    }
    const faces = [...document.fonts].filter((f) => f.family.replace(/["']/g, '').startsWith('KaTeX_'));
    if (!faces.some((f) => f.status === 'loaded')) {
      problems.push('no KaTeX font loaded: the math is drawn in fallback fonts');
    }
    for (const f of faces.filter((f) => f.status === 'error')) {
      problems.push(`KaTeX font ${f.family} failed to load`);
    }
  }

  // Figures: a drawn SVG, a caption, a text alternative.
  const figures = [];
  for (const fig of main ? main.querySelectorAll('figure') : []) {
    const id = fig.id || '(no id)';
    figures.push(id);
    const svg = fig.querySelector('svg');
    if (!svg) {
      problems.push(`figure ${id}: no SVG drawing`);
    } else {
      const box = svg.getBoundingClientRect();
      const style = getComputedStyle(svg);
      if (box.width < 50 || box.height < 50 || style.display === 'none'
          || style.visibility === 'hidden' || Number(style.opacity) === 0) {
        problems.push(`figure ${id}: the SVG is not drawn (${Math.round(box.width)}×${Math.round(box.height)} px, display ${style.display}, visibility ${style.visibility})`);
      }
      const shapes = [...svg.querySelectorAll('rect, path, line, polyline, polygon, circle, ellipse, text, image, use')]
        .filter((el) => {
          try {
            const b = el.getBBox();
            return b.width > 0 || b.height > 0;
          } catch {
            return false;
          }
        });
      if (shapes.length === 0) problems.push(`figure ${id}: the SVG draws nothing (no shape has a size)`);
      let name = (svg.getAttribute('aria-label') || '').trim();
      for (const ref of (svg.getAttribute('aria-labelledby') || '').split(/\s+/).filter(Boolean)) {
        name += (document.getElementById(ref)?.textContent || '').trim();
      }
      if (svg.getAttribute('role') !== 'img' || !name) {
        problems.push(`figure ${id}: the SVG has no text alternative (role="img" with a <title> or aria-label)`);
      }
    }
    const caption = fig.querySelector('figcaption');
    if (!caption || !caption.textContent.trim()) {
      problems.push(`figure ${id}: no caption`);
    } else if (caption.getBoundingClientRect().height === 0) {
      problems.push(`figure ${id}: the caption is not visible`);
    }
  }
  for (const img of main ? main.querySelectorAll('img') : []) {
    if (!img.complete || img.naturalWidth === 0) problems.push(`image ${img.getAttribute('src')} is not drawn`);
    if (!img.hasAttribute('alt')) problems.push(`image ${img.getAttribute('src')} has no alt text`);
  }

  // Links as the browser resolves them, including those mdBook's
  // JavaScript adds (the sidebar). A page with <base> (mdBook's 404 page)
  // points its heading's self-link at the site root: skip those.
  const hasBase = !!document.querySelector('base');
  const links = [];
  for (const el of document.querySelectorAll('[href], [src]')) {
    if (el.tagName === 'BASE') continue;
    for (const attr of ['href', 'src']) {
      const value = el.getAttribute(attr);
      if (value === null || (hasBase && value.startsWith('#'))) continue;
      let url;
      try {
        url = new URL(value, document.baseURI);
      } catch {
        problems.push(`unparseable ${attr}="${value}"`);
        continue;
      }
      links.push({ attr, value, url: url.href });
    }
  }
  const h1 = main?.querySelector('h1');
  return {
    problems,
    links,
    ids: [...document.querySelectorAll('[id]')].map((e) => e.id),
    figures,
    formulas: formulas.length,
    title: h1 ? h1.textContent.trim() : '',
    headings: main ? [...main.querySelectorAll('h1, h2, h3, h4, h5, h6')].map((h) => h.textContent.trim()) : [],
    text: main ? main.innerText : '',
  };
}

// Content cut at the current width, inside the page: an element that
// hides part of its content (overflow hidden or clip, content wider than
// the box), or one whose box or content reaches past the content column
// or the window with no scrollable box around it (the page hides what
// sticks out: mdBook's body clips sideways overflow). Of nested offenders
// the innermost is named (a formula by its TeX). Runs inside the page.
function layout(width) {
  const problems = [];
  const main = document.querySelector('main');
  if (!main) return problems;
  const column = main.getBoundingClientRect();
  const view = document.documentElement.clientWidth;
  const left = Math.max(0, column.left) - 1;
  const right = Math.min(view, column.right) + 1;
  const overflowX = (el) => getComputedStyle(el).overflowX;
  const hides = (el) => ['hidden', 'clip'].includes(overflowX(el));
  const name = (el) => {
    const math = el.closest('.katex-display');
    if (math) {
      const tex = math.querySelector('annotation')?.textContent || '';
      return `display math "${tex.replace(/\s+/g, ' ').trim().slice(0, 60)}"`;
    }
    const id = el.id ? `#${el.id}` : '';
    const cls = [...el.classList].slice(0, 2).map((c) => `.${c}`).join('');
    const words = (el.innerText || el.textContent || '').replace(/\s+/g, ' ').trim().slice(0, 50);
    const near = el.closest('[id]:not(main)') || el.parentElement?.previousElementSibling?.closest('[id]');
    const where = !id && near?.id ? ` (near #${near.id})` : '';
    return `<${el.tagName.toLowerCase()}${id}${cls}>${where} "${words}"`;
  };
  const found = [];
  for (const el of main.querySelectorAll('*')) {
    // Screen-reader-only MathML, the inside of drawings, and the inside of
    // a formula's layout, where KaTeX hides overflow on purpose (stretchy
    // arrows): a formula is measured by its outer boxes.
    if (el.closest('.katex-mathml, svg > *, .katex-html > *')) continue;
    const style = getComputedStyle(el);
    if (style.display === 'none' || style.visibility === 'hidden') continue;
    const box = el.getBoundingClientRect();
    if (box.width < 2 || box.height < 2) continue;
    const spill = el.scrollWidth - el.clientWidth;
    if (hides(el) && spill > 1 && el.clientWidth > 2) {
      found.push({ el, what: `hides ${spill} px of its content (overflow ${style.overflowX}, content `
        + `${el.scrollWidth} px in a ${el.clientWidth} px box)` });
      continue;
    }
    // How far the box, or what spills out of it, reaches past the column.
    const visible = style.overflowX === 'visible' && el.clientWidth > 0;
    const reach = Math.max(box.right, visible ? box.left + el.scrollWidth : box.right);
    const past = Math.max(reach - right, left - box.left);
    if (past <= 0) continue;
    // A claim mark's target may reach into the page's margin by its own
    // padding (16 px): back over the word before it, at the start of a line
    // (after a formula, whose full stop wraps with the mark), or past the
    // end of one, as punctuation hangs. The mark itself stays visible.
    if (el.closest('sup.claim') && past <= 16) continue;
    let contained = false;
    for (let a = el.parentElement; a && a !== main; a = a.parentElement) {
      if (overflowX(a) !== 'visible') {
        contained = true; // it scrolls, or hides (reported as itself)
        break;
      }
    }
    if (contained) continue;
    found.push({ el, what: `is cut: it reaches ${Math.round(past)} px past the `
      + `${reach > view || box.left < 0 ? 'window' : 'content column'} (${Math.round(column.width)} px) `
      + 'with no scrollbar' });
  }
  for (const f of found) {
    if (found.some((g) => g !== f && f.el.contains(g.el))) continue;
    problems.push(`at ${width} px wide: ${name(f.el)} ${f.what}`);
  }
  return [...new Set(problems)];
}

// ------------------------------------------------------------ figure text

// Figure text as a reader sees it at the current width, inside the page.
// Each figure holds a desktop and a phone drawing (crates/figures), and the
// page must show exactly one. Every text and tspan of the shown drawing is
// measured as displayed: its font size times the scale at which the page
// shows the SVG's viewBox, a Unicode superscript ("10⁻³") at `superscript`
// of its text's size (sub- and superscripts drawn as tspans are measured as
// themselves). Every text must reach `minText`, and the entries of a legend
// (text.legend) must share one size. Returns the problems and, per figure,
// the smallest size and the legend's sizes.
function figureText({ minText, superscript, width }) {
  const problems = [];
  const sizes = [];
  const main = document.querySelector('main');
  const clip = (s) => s.replace(/\s+/g, ' ').trim().slice(0, 70);
  const round = (px) => Math.round(px * 10) / 10;
  for (const fig of main ? main.querySelectorAll('figure') : []) {
    const id = fig.id || '(no id)';
    const shown = [...fig.querySelectorAll(':scope > svg')].filter((svg) => {
      const style = getComputedStyle(svg);
      return style.display !== 'none' && style.visibility !== 'hidden'
        && svg.getBoundingClientRect().width > 0;
    });
    if (shown.length !== 1) {
      problems.push(`figure ${id}: ${shown.length} drawings shown at ${width} px wide (one expected, `
        + 'the desktop or the phone drawing)');
    }
    const svg = shown[0];
    const view = svg?.viewBox?.baseVal;
    const box = svg?.getBoundingClientRect().width;
    if (!svg || !view || !(view.width > 0) || !(box > 0)) continue;
    const scale = box / view.width;
    const small = [];
    const legend = new Set();
    let smallest = Infinity;
    for (const t of svg.querySelectorAll('text, tspan')) {
      const words = [...t.childNodes].filter((n) => n.nodeType === Node.TEXT_NODE)
        .map((n) => n.nodeValue).join('').trim();
      if (!words) continue;
      const raised = /[⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺]/u.test(words);
      const px = parseFloat(getComputedStyle(t).fontSize) * scale * (raised ? superscript : 1);
      smallest = Math.min(smallest, px);
      if (px < minText - 1e-6) small.push({ words, px, raised });
      if (t.matches('text.legend')) legend.add(round(parseFloat(getComputedStyle(t).fontSize) * scale));
    }
    if (small.length > 0) {
      small.sort((a, b) => a.px - b.px);
      const s = small[0];
      problems.push(`figure ${id}: ${small.length} text(s) smaller than ${minText} px at ${width} px wide, `
        + `smallest "${clip(s.words)}" at ${s.px.toFixed(1)} px${s.raised ? ' (its exponent)' : ''} `
        + `(figure drawn ${Math.round(view.width)} px wide, shown ${Math.round(box)} px)`);
    }
    if (legend.size > 1) {
      problems.push(`figure ${id}: legend entries in ${legend.size} sizes at ${width} px wide `
        + `(${[...legend].sort((a, b) => a - b).join(', ')} px); a legend reads in one size`);
    }
    sizes.push({ id, drawn: Math.round(view.width), smallest: round(smallest), legend: [...legend] });
  }
  return { problems, sizes };
}

// What is wrong with a search result's excerpt, if it shows math more
// than once or as TeX source (the search index keeps one readable form of
// each formula, crates/xtask/src/search.rs): a TeX command (one a formula
// would use; code's "\n" is not one); a zero-width space, which only
// KaTeX's visible HTML holds (its layout struts); one Greek letter or
// symbol twice in a row ("β β"); or a run of four to six words repeated at
// once with a single letter, Greek letter or symbol among them (a formula
// and its copy). Shorter runs repeat in honest math ("k t k t ⊤").
function excerptProblem(text) {
  const tex = /\\(?:mathbf|mathcal|mathbb|boldsymbol|operatorname|frac|sqrt|sum|prod|top|cdot|times|left|right|text|bar|hat|tilde|alpha|beta|gamma|delta|phi|varphi|sigma|ell|quad|qquad|leq?|geq?)(?![a-zA-Z])/.exec(text);
  if (tex) return `TeX source "${tex[0]}"`;
  if (text.includes('\u200b')) return "KaTeX's visible HTML (a zero-width space)";
  // Words without the punctuation that follows them; punctuation standing
  // alone is kept as a word, so a list of symbols ("μ , μ ′") is not read
  // as one symbol twice.
  const words = text
    .split(/\s+/)
    .map((w) => w.replace(/[.,;:!?)]+$/u, '') || w)
    .filter(Boolean);
  const symbol = (w) => /[\u0370-\u03FF\u2200-\u22FF\u00D7]/u.test(w);
  const mathy = (w) => /^[A-Za-z]$/.test(w) || symbol(w);
  for (const k of [1, 4, 5, 6]) {
    for (let i = 0; i + 2 * k <= words.length; i += 1) {
      const a = words.slice(i, i + k);
      const b = words.slice(i + k, i + 2 * k);
      const math = k === 1 ? symbol(a[0]) : a.some(mathy);
      if (a.join(' ') === b.join(' ') && math) return `"${a.join(' ')}" twice in a row`;
    }
  }
  return null;
}

// Colour contrast of figure text and captions against the page, in the
// current theme; runs inside the page.
function readability(minContrast) {
  const parse = (c) => {
    const m = /rgba?\(([^)]+)\)/.exec(c || '');
    if (!m) return null;
    const p = m[1].split(/[\s,/]+/).filter(Boolean).map(Number);
    return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 };
  };
  const luminance = ({ r, g, b }) => {
    const f = (v) => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const contrast = (a, b) => {
    const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
    return (hi + 0.05) / (lo + 0.05);
  };
  // The colour behind `el`: its ancestors' backgrounds, composited.
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c.a > 0) {
        layers.push(c);
        if (c.a >= 1) break;
      }
    }
    let base = { r: 255, g: 255, b: 255 };
    for (const c of layers.reverse()) {
      base = {
        r: c.r * c.a + base.r * (1 - c.a),
        g: c.g * c.a + base.g * (1 - c.a),
        b: c.b * c.a + base.b * (1 - c.a),
      };
    }
    return base;
  };
  const problems = [];
  const check = (el, colour, what) => {
    const fg = parse(colour);
    if (!fg || fg.a === 0) return;
    const ratio = contrast(fg, background(el));
    if (ratio < minContrast) {
      problems.push(`${what} has contrast ${ratio.toFixed(2)}:1 against the page (needs ${minContrast}:1)`);
    }
  };
  const main = document.querySelector('main');
  for (const fig of main ? main.querySelectorAll('figure') : []) {
    const id = fig.id || '(no id)';
    const texts = [...fig.querySelectorAll('svg text')].filter((t) => t.textContent.trim());
    const before = problems.length;
    for (const t of texts) {
      check(fig, getComputedStyle(t).fill, `figure ${id}: text "${t.textContent.trim()}"`);
      if (problems.length > before) break; // one per figure is enough
    }
  }
  for (const cap of main ? main.querySelectorAll('figcaption, .listing-caption, .output-caption') : []) {
    const what = `caption ${cap.id || cap.closest('figure')?.id || '(no id)'}`;
    check(cap, getComputedStyle(cap).color, what);
    const label = cap.querySelector('.caption-label');
    if (label) check(label, getComputedStyle(label).color, `${what}: its label`);
  }
  // Links in the text: one line per page and theme, with how many fail.
  const before = problems.length;
  const links = main ? [...main.querySelectorAll('a')].filter((a) => a.textContent.trim()) : [];
  for (const a of links) check(a, getComputedStyle(a).color, `link "${a.textContent.trim().slice(0, 40)}"`);
  const failed = problems.splice(before);
  if (failed.length > 0) problems.push(`${failed.length} of ${links.length} links are hard to read, e.g. ${failed[0]}`);
  return problems;
}

function normalise(text) {
  return ` ${text.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, ' ').trim()} `;
}

// Figure text measured at each width, by page and figure id: the smallest
// text and the legend's size(s) in px, for the summary.
const figureSizes = new Map();

// Measure the figure text of the page open in `page` at `width` (see
// figureText) and report what falls short.
async function measureFigures(page, rel, minText, width) {
  const { problems: found, sizes } = await page.evaluate(figureText, { minText, superscript: SUPERSCRIPT, width });
  for (const p of found) problem(rel, p);
  for (const s of sizes) {
    const key = `${rel}#${s.id}`;
    if (!figureSizes.has(key)) figureSizes.set(key, {});
    figureSizes.get(key)[width] = s;
  }
}

// Photograph each figure as a phone shows it (light theme).
async function shootPhoneFigures(page, rel, ids, dir) {
  for (const id of ids) {
    const box = await page.evaluate((i) => {
      const r = document.getElementById(i)?.getBoundingClientRect();
      return r ? { x: r.x + window.scrollX, y: r.y + window.scrollY, width: r.width, height: r.height } : null;
    }, id);
    if (!box || box.width < 1 || box.height < 1) continue;
    const name = `${rel.replace(/\.html$/, '').replace(/\//g, '_')}--${id}-phone.png`;
    await page.screenshot({ path: path.join(dir, name), fullPage: true, clip: box, style: HIDE_MENU_BAR });
  }
}

// The excerpts of the search results shown now must read as text: each
// formula once, no TeX (see excerptProblem).
async function checkExcerpts(page, where) {
  const teasers = await page.evaluate(() => [...document.querySelectorAll('#mdbook-searchresults .teaser')]
    .map((t) => t.textContent));
  for (const text of teasers) {
    const why = excerptProblem(text);
    if (why) {
      problem(where, `a result's excerpt repeats its math or shows TeX (${why}): "${text.replace(/\s+/g, ' ').trim().slice(0, 90)}"`);
      return;
    }
  }
}

// One line per figure: its smallest text and its legend's size, at the
// desktop and the phone width, and the smallest over all figures.
function printFigureSizes() {
  const fmt = (s) => (s ? `${s.smallest} px${s.legend.length ? `, legend ${s.legend.join('/')} px` : ''}` : 'not measured');
  let least = { [DESKTOP]: Infinity, [PHONE]: Infinity };
  const lines = [];
  for (const [key, at] of [...figureSizes].sort()) {
    if (key.startsWith('print.html')) continue;
    for (const w of [DESKTOP, PHONE]) if (at[w]) least[w] = Math.min(least[w], at[w].smallest);
    lines.push(`  ${key}: ${DESKTOP} px: ${fmt(at[DESKTOP])}; ${PHONE} px: ${fmt(at[PHONE])}`);
  }
  if (lines.length === 0) return;
  console.log(`figure text (smallest text as shown, and the legend's size), `
    + `least ${least[DESKTOP]} px at ${DESKTOP} px wide and ${least[PHONE]} px at ${PHONE} px wide:`);
  for (const l of lines) console.log(l);
}

// ---------------------------------------------------------------- claim marks

// The record of the test run the book was built with (--record), as the
// names of the tests that passed and the commit; null without one.
function readRecord(file) {
  if (!file || !fs.existsSync(file)) return null;
  const passed = [];
  let commit = '';
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('# commit: ')) commit = line.slice('# commit: '.length).trim();
    const [outcome, , name] = line.split('\t');
    if (outcome === 'ok' && name) passed.push(name.split('::').pop());
  }
  return { passed, commit: commit.slice(0, 12) };
}
const record = readRecord(opts.record);

// Claim marks as a reader meets them: each mark's link is a target of at
// least 24 x 24 px; no mark starts a line; every mark's tests are in the
// page's store, each with its code, kind of evidence, command and result;
// and nothing says "passed" that the record does not hold.
function claimMarks({ record }) {
  const problems = [];
  const lacks = (e) => {
    const missing = [];
    const body = e.querySelector('.claim-body');
    const code = body && body.querySelector('pre code');
    if (!body || (body.tagName === 'DETAILS' ? !code || code.textContent.trim() === '' : body.textContent.trim() === '')) missing.push('the test body');
    const kind = e.querySelector('.claim-kind');
    if (!kind || kind.textContent.replace('Evidence:', '').trim() === '') missing.push('the evidence kind');
    const command = e.querySelector('.claim-command code');
    if (!command || !command.textContent.startsWith('cargo ')) missing.push('the command');
    const result = e.querySelector('.claim-result');
    if (!result || result.textContent.replace('Result:', '').trim() === '') missing.push('the result');
    return missing;
  };
  const all = [...document.querySelectorAll('main sup.claim[data-tests]')];
  const small = [];
  const starts = [];
  for (const sup of all) {
    const a = sup.querySelector('a');
    const r = a.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue; // hidden with its block
    if (r.width < 23.5 || r.height < 23.5) small.push(`${sup.id} (${r.width.toFixed(1)}×${r.height.toFixed(1)} px)`);
    const block = sup.closest('p, li, td, dd, blockquote') || sup.parentElement;
    const walker = document.createTreeWalker(block, NodeFilter.SHOW_TEXT);
    let last = null;
    while (walker.nextNode()) {
      const n = walker.currentNode;
      if (sup.contains(n) || !(n.compareDocumentPosition(sup) & Node.DOCUMENT_POSITION_FOLLOWING)) break;
      if (n.parentElement.closest('.katex-mathml, .claim-panel, sup.claim')) continue;
      const t = n.nodeValue.replace(/[\s\u2060]+$/, '');
      if (t.length > 0) last = [n, t.length];
    }
    if (!last) continue;
    const range = document.createRange();
    range.setStart(last[0], last[1] - 1);
    range.setEnd(last[0], last[1]);
    const c = range.getBoundingClientRect();
    const m = sup.getBoundingClientRect();
    if (m.left < c.left && m.top > c.top + 4) starts.push(sup.id);
  }
  if (small.length > 0) problems.push(`${small.length} claim mark(s) smaller than 24 × 24 px, e.g. ${small[0]}`);
  if (starts.length > 0) problems.push(`${starts.length} claim mark(s) start a line, e.g. ${starts[0]}`);
  for (const sup of all) {
    for (const t of sup.getAttribute('data-tests').split(' ')) {
      const entry = document.getElementById(t);
      if (!entry || entry.querySelectorAll('.claim-evidence').length === 0) {
        problems.push(`claim mark ${sup.id}: no evidence for ${t} on the page`);
      }
    }
  }
  for (const e of document.querySelectorAll('.claim-evidence')) {
    const missing = lacks(e);
    const name = (e.querySelector('.claim-name code') || {}).textContent || '?';
    if (missing.length > 0) problems.push(`the evidence of ${name} lacks ${missing.join(', ')}`);
    const result = (e.querySelector('.claim-result') || {}).textContent || '';
    if (/\bpassed\b/.test(result)) {
      if (!record) problems.push(`says ${name} passed, but the book was checked without a record of a test run`);
      else if (!record.passed.includes(name)) problems.push(`says ${name} passed, but the record does not hold it as passed`);
      else if (!result.includes(record.commit)) problems.push(`says ${name} passed in a run other than the record's (commit ${record.commit})`);
    }
  }
  for (const a of document.querySelectorAll('sup.claim > a[title]')) {
    if (/\bpassed\b/.test(a.title) && !record) {
      problems.push(`claim mark ${a.parentElement.id} says "passed", but the book was checked without a record of a test run`);
      break;
    }
  }
  return problems;
}

// Open the first mark of the page by a click and the last by the keyboard
// (focus, Enter); each must open its panel under the sentence, whole,
// and close again.
async function openMarks(page, width) {
  const found = [];
  const marks = page.locator('main sup.claim[data-tests] > a');
  const n = await marks.count();
  if (n === 0) return found;
  const panel = (id) => page.evaluate((markId) => {
    const p = document.getElementById(`panel-${markId.replace(/^mark-/, '')}`);
    if (!p) return ['opened no panel'];
    const r = p.getBoundingClientRect();
    const out = [];
    if (r.width < 1 || r.height < 1) out.push('opened a panel that is not shown');
    const ev = [...p.querySelectorAll('.claim-evidence')];
    if (ev.length === 0) out.push('opened a panel with no test');
    for (const e of ev) {
      const miss = [];
      const body = e.querySelector('.claim-body');
      if (!body || (body.tagName === 'DETAILS' && !body.querySelector('pre code'))) miss.push('the test body');
      if (!e.querySelector('.claim-kind') || e.querySelector('.claim-kind').textContent.replace('Evidence:', '').trim() === '') miss.push('the evidence kind');
      if (!e.querySelector('.claim-command code')) miss.push('the command');
      if (!e.querySelector('.claim-result') || e.querySelector('.claim-result').textContent.replace('Result:', '').trim() === '') miss.push('the result');
      if (miss.length > 0) out.push(`opened a panel lacking ${miss.join(', ')}`);
    }
    return out;
  }, id);
  for (const [index, how] of [[0, 'click'], [n - 1, 'keyboard']]) {
    const link = marks.nth(index);
    const id = await link.evaluate((a) => a.parentElement.id);
    const url = page.url();
    if (how === 'click') {
      await link.click();
    } else {
      await link.focus();
      await page.keyboard.press('Enter');
    }
    if (page.url().split('#')[0] !== url.split('#')[0]) {
      found.push(`at ${width} px: opening claim mark ${id} by ${how} left the page for ${page.url()}`);
      await page.goBack();
      continue;
    }
    for (const p of await panel(id)) found.push(`at ${width} px: claim mark ${id} by ${how}: ${p}`);
    if (how === 'click') await link.click();
    else await page.keyboard.press('Enter');
    const still = await page.evaluate((markId) => !!document.getElementById(`panel-${markId.replace(/^mark-/, '')}`), id);
    if (still) found.push(`at ${width} px: claim mark ${id} by ${how}: its panel does not close again`);
  }
  return found;
}

// The toggle hides every mark, and the choice holds on the next page.
async function toggleMarks(browser, origin, chapters) {
  const found = [];
  const context = await themed(browser, 'light');
  const tab = await newTab(context, origin);
  const { page } = tab;
  const withMarks = [];
  for (const rel of chapters) {
    const html = fs.readFileSync(path.join(opts.book, rel), 'utf8');
    if (html.includes('data-tests=')) withMarks.push(rel);
    if (withMarks.length === 2) break;
  }
  if (withMarks.length === 2) {
    const shown = () => page.evaluate(() => [...document.querySelectorAll('main sup.claim')]
      .some((s) => s.getBoundingClientRect().width > 0));
    await open(tab, origin, withMarks[0]);
    const button = page.locator('#claim-toggle');
    if (await button.count() === 0) {
      found.push(`${withMarks[0]}: no button hides the claim marks`);
    } else {
      await button.click();
      if (await shown()) found.push(`${withMarks[0]}: the toggle did not hide the claim marks`);
      await open(tab, origin, withMarks[1]);
      if (await shown()) found.push(`${withMarks[1]}: the claim marks hidden on another page are shown again`);
      await page.locator('#claim-toggle').click();
      if (!(await shown())) found.push(`${withMarks[1]}: the toggle did not show the claim marks again`);
    }
  }
  await context.close();
  return found;
}

// ---------------------------------------------------------------- main

async function main() {
  const server = await serve(opts.book);
  const origin = `http://127.0.0.1:${server.address().port}`;
  const browser = await chromium.launch({
    executablePath: opts.chromium,
    headless: true,
    args: FLAGS,
    timeout: 60_000,
  });
  try {
    await run(browser, origin);
  } finally {
    await browser.close();
    server.close();
  }
}

async function themed(browser, theme, width = DESKTOP) {
  const context = await browser.newContext({ viewport: { width, height: 800 } });
  context.setDefaultTimeout(60_000); // generous: the machine may be busy
  await context.addInitScript((t) => {
    try {
      localStorage.setItem('mdbook-theme', t);
    } catch {
      // storage disabled: mdBook falls back to its default theme
    }
  }, theme);
  return context;
}

// Switch the open page to `theme` through mdBook's theme menu (its own
// click handlers, without waiting for the pointer as a real click would).
async function switchTheme(page, theme) {
  const classes = await page.evaluate((t) => {
    document.getElementById('mdbook-theme-toggle').click();
    document.getElementById(`mdbook-theme-${t}`).click();
    return [...document.documentElement.classList];
  }, theme);
  return classes.includes(theme) ? null : `choosing the ${theme} theme did not apply it (html class: ${classes.join(' ')})`;
}

async function run(browser, origin) {
  const pages = htmlPages(opts.book);
  const chapters = pages.filter((p) => !NOT_CHAPTERS.has(p));
  const figureDir = path.join(opts.screenshots, 'figures');
  fs.mkdirSync(figureDir, { recursive: true });
  for (const dir of [opts.screenshots, figureDir]) {
    for (const f of fs.readdirSync(dir)) if (f.endsWith('.png')) fs.rmSync(path.join(dir, f));
  }

  // 1. Every page, opened once in the light theme: the page checks and a
  //    screenshot. A chapter is then switched through every theme with
  //    the theme menu: figure text, captions and links must stay readable,
  //    each figure is photographed in PICTURE_THEMES, and the whole
  //    chapter once more in a dark theme.
  const seen = new Map();
  let figureShots = 0;
  const visit = async (tab, rel) => {
    const { page } = tab;
    const errors = await open(tab, origin, rel);
    const found = await page.evaluate(inspect, { minText: MIN_FIGURE_TEXT_PX, superscript: SUPERSCRIPT, width: DESKTOP });
    for (const p of await page.evaluate(layout, DESKTOP)) problem(rel, p);
    await measureFigures(page, rel, MIN_FIGURE_TEXT_PX, DESKTOP);
    if (tab.phone) {
      // The same page on a phone: its own tab, laid out from the start
      // at that width (mdBook hides its sidebar when it loads narrow).
      const phoneErrors = await open(tab.phone, origin, rel);
      for (const p of await tab.phone.page.evaluate(layout, PHONE)) problem(rel, p);
      await measureFigures(tab.phone.page, rel, MIN_PHONE_FIGURE_TEXT_PX, PHONE);
      if (chapters.includes(rel)) await shootPhoneFigures(tab.phone.page, rel, found.figures, figureDir);
      for (const e of phoneErrors) problem(rel, `at ${PHONE} px: ${e}`);
      if (chapters.includes(rel)) {
        for (const p of await tab.phone.page.evaluate(claimMarks, { record })) problem(rel, `at ${PHONE} px: ${p}`);
        for (const p of await openMarks(tab.phone.page, PHONE)) problem(rel, p);
      }
    }
    seen.set(rel, found);
    for (const p of found.problems) problem(rel, p);
    if (chapters.includes(rel)) {
      await shoot(page, path.join(opts.screenshots, shotName(rel, 'light')));
      const captioned = await page.evaluate(() => !!document.querySelector('main .listing-caption, main .output-caption'));
      const themes = found.figures.length > 0 || captioned ? THEMES : [DARK];
      for (const theme of themes) {
        const failed = await switchTheme(page, theme);
        if (failed) {
          problem(rel, failed);
          continue;
        }
        for (const p of await page.evaluate(readability, MIN_CONTRAST)) problem(rel, `${theme} theme: ${p}`);
        for (const id of PICTURE_THEMES.includes(theme) ? found.figures : []) {
          // The figure's box on the page; a clip of a full-page capture is
          // quicker than an element screenshot and takes tall figures whole.
          const box = await page.evaluate((i) => {
            const r = document.getElementById(i).getBoundingClientRect();
            return { x: r.x + window.scrollX, y: r.y + window.scrollY, width: r.width, height: r.height };
          }, id);
          if (box.width < 1 || box.height < 1) continue; // reported above
          const name = `${rel.replace(/\.html$/, '').replace(/\//g, '_')}--${id}-${theme}.png`;
          await page.screenshot({ path: path.join(figureDir, name), fullPage: true, clip: box, style: HIDE_MENU_BAR });
          figureShots += 1;
        }
        if (theme === DARK) {
          await page.evaluate(() => window.scrollTo(0, 0));
          await shoot(page, path.join(opts.screenshots, shotName(rel, theme)));
          // The claim marks, in this dark theme.
          for (const p of await page.evaluate(claimMarks, { record })) problem(rel, `at ${DESKTOP} px: ${p}`);
          for (const p of await openMarks(page, DESKTOP)) problem(rel, `${theme} theme: ${p}`);
        }
      }
    }
    if (rel === 'print.html') {
      // The figures must survive print styles too.
      await page.emulateMedia({ media: 'print' });
      // Each figure's shown drawing (the other is display: none).
      const sizes = await page.evaluate(() => [...document.querySelectorAll('main figure')]
        .map((f) => [...f.querySelectorAll(':scope > svg')].find((s) => getComputedStyle(s).display !== 'none') || f)
        .map((s) => [s.closest('figure').id, s.getBoundingClientRect().width, s.getBoundingClientRect().height]));
      for (const [id, w, h] of sizes) {
        if (w < 50 || h < 50) problem(rel, `figure ${id} is not drawn in print (${Math.round(w)}×${Math.round(h)} px)`);
      }
    }
    for (const e of errors) problem(rel, e);
  };
  // Two tabs at a time, one per core; each in its own context, so that one
  // tab's theme (kept in localStorage) never reaches the other.
  const queue = [...pages];
  const contexts = [];
  await Promise.all([0, 1].map(async () => {
    const context = await themed(browser, 'light');
    contexts.push(context);
    const tab = await newTab(context, origin);
    const phone = await themed(browser, 'light', PHONE);
    contexts.push(phone);
    tab.phone = await newTab(phone, origin);
    while (queue.length > 0) await visit(tab, queue.shift());
  }));
  const context = contexts[0];
  const tab = await newTab(context, origin);
  const { page } = tab;

  // 2. Links and anchors, as the browser resolved them.
  for (const [rel, found] of seen) {
    const reported = new Set();
    for (const { attr, value, url } of found.links) {
      const u = new URL(url);
      if (u.origin !== origin || reported.has(value)) continue;
      let target = decodeURIComponent(u.pathname).replace(/^\//, '');
      if (target === '' || target.endsWith('/')) target += 'index.html';
      if (!fs.existsSync(path.join(opts.book, target))) {
        reported.add(value);
        problem(rel, `broken link ${attr}="${value}": no ${target} in the book`);
        continue;
      }
      const fragment = decodeURIComponent(u.hash.replace(/^#/, ''));
      // A line of rustdoc's source view: the build checked it (not opened here).
      if (fragment && target.endsWith('.html') && !target.startsWith('rustdoc/')
        && !(seen.get(target)?.ids ?? []).includes(fragment)) {
        reported.add(value);
        problem(rel, `broken anchor ${attr}="${value}": no id "${fragment}" in ${target}`);
      }
    }
  }

  // 3. The print page holds every chapter, with its math and figures.
  const print = seen.get('print.html');
  if (!print) {
    problem('print.html', 'missing: mdBook did not write the print page');
  } else {
    const headings = new Set(print.headings);
    let formulas = 0;
    const figures = [];
    for (const rel of chapters) {
      const ch = seen.get(rel);
      formulas += ch.formulas;
      figures.push(...ch.figures);
      if (ch.title && !headings.has(ch.title)) {
        problem('print.html', `chapter ${rel} ("${ch.title}") is missing`);
      }
    }
    if (print.formulas < formulas) {
      problem('print.html', `has ${print.formulas} formulas; the chapters have ${formulas}`);
    }
    const missing = figures.filter((f) => !print.figures.includes(f));
    if (missing.length > 0) problem('print.html', `is missing figure(s) ${missing.join(', ')}`);
  }

  // 4. Search finds what the chapters say: the required terms, each
  //    optional term that some chapter contains, and every chapter by its
  //    title. Typed into the search bar, as a reader would.
  const texts = new Map(chapters.map((rel) => [rel, normalise(seen.get(rel).text)]));
  const queries = [];
  for (const term of opts.mustFind) queries.push({ term });
  for (const term of opts.findIfPresent) {
    if ([...texts.values()].some((t) => t.includes(normalise(term)))) queries.push({ term });
  }
  for (const rel of chapters) {
    const title = seen.get(rel).title;
    if (title) queries.push({ term: title, page: rel });
  }
  const searched = [];
  const errors = await open(tab, origin, 'index.html');
  await page.click('#mdbook-search-toggle');
  for (const q of queries) {
    const where = `search "${q.term}"`;
    // Type until results show: keystrokes before the search index has
    // loaded are dropped by mdBook's searcher.
    let shown = false;
    for (let waited = 0; !shown && waited < 10_000; waited += 2_000) {
      await page.fill('#mdbook-searchbar', '');
      await page.fill('#mdbook-searchbar', q.term);
      await page.press('#mdbook-searchbar', 'End');
      shown = await page.waitForFunction(
        (term) => (document.getElementById('mdbook-searchresults-header')?.textContent || '').includes(term),
        q.term,
        { timeout: 2_000 },
      ).then(() => true, () => false);
    }
    if (!shown) {
      problem(where, 'the search bar showed no results within 10 s (does the search index load?); '
        + 'the other searches were skipped');
      break;
    }
    await checkExcerpts(page, where);
    const hits = await page.evaluate(() => [...document.querySelectorAll('#mdbook-searchresults li a')]
      .map((a) => new URL(a.getAttribute('href'), document.baseURI).pathname.replace(/^\//, '')));
    if (q.page) {
      if (!hits.includes(q.page)) problem(where, `does not find its chapter ${q.page}`);
      continue;
    }
    const containing = [...texts].filter(([, t]) => t.includes(normalise(q.term))).map(([rel]) => rel);
    if (containing.length === 0) {
      problem(where, 'no chapter contains this term, so readers cannot find it');
    } else if (!hits.some((h) => containing.includes(h))) {
      problem(where, `finds none of the chapters that contain it (${containing.join(', ')}); ${hits.length} results`);
    } else {
      searched.push(q.term);
    }
  }
  for (const e of errors) problem('search', e);
  for (const c of contexts) await c.close();
  for (const p of await toggleMarks(browser, origin, chapters)) problem('claim marks', p);

  printFigureSizes();
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  console.log(
    `browser check: ${pages.length} pages, ${chapters.length} chapters, themes ${THEMES.join(' ')}, `
    + `${figureShots} figure pictures, search for ${searched.map((t) => `"${t}"`).join(', ') || 'nothing'} `
    + `and every chapter title; ${seconds} s`,
  );
  console.log(`screenshots: ${opts.screenshots}`);
}

try {
  await main();
} catch (e) {
  console.error(`check.mjs: the browser check could not run: ${e.stack || e}`);
  process.exit(2);
}
// The same problem once, with a count (an exception in a handler repeats).
const counts = new Map();
for (const p of problems) counts.set(p, (counts.get(p) || 0) + 1);
for (const [p, n] of counts) console.log(`problem: ${p}${n > 1 ? ` (${n} times)` : ''}`);
process.exit(problems.length > 0 ? 1 : 0);
