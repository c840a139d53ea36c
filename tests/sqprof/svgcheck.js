// svgcheck.js - runs the script of an sqprof flame graph under a minimal DOM (node has
// none): checks the initial layout, that a click zooms a frame to the full width and
// hides the frames outside it, that hovering shows the frame's title, that Esc resets,
// and, given a search term, prints what "Search" matched.
//
//   node tests/sqprof/svgcheck.js FILE.svg [SEARCH-REGEXP]
const fs = require('fs');
const svg = fs.readFileSync(process.argv[2], 'utf8');
const script = svg.slice(svg.indexOf('<![CDATA[') + 9, svg.indexOf(']]>'));
function unesc(s) { return s.replace(/&lt;/g,'<').replace(/&gt;/g,'>').replace(/&quot;/g,'"').replace(/&apos;/g,"'").replace(/&amp;/g,'&'); }
function el(attrs) { return { attrs, style: {}, listeners: {}, textContent: '',
  getAttribute(n) { return this.attrs[n]; }, setAttribute(n, v) { this.attrs[n] = String(v); },
  hasAttribute(n) { return n in this.attrs; },
  addEventListener(t, f) { this.listeners[t] = f; } }; }
const frames = [];
const re = /<g class="f" data-x="(\d+)" data-w="(\d+)" data-d="(\d+)" data-n="([^"]*)"><title>([^<]*)<\/title><rect x="([\d.]+)" y="\d+" width="([\d.]+)"[^>]*fill="([^"]+)"\/><text[^>]*>([^<]*)<\/text><\/g>/g;
let m;
while ((m = re.exec(svg))) {
  const g = el({'data-x': m[1], 'data-w': m[2], 'data-d': m[3], 'data-n': unesc(m[4])});
  g.rect = el({x: m[6], width: m[7], fill: m[8]}); g.text = el({}); g.text.textContent = unesc(m[9]);
  g.title = { textContent: unesc(m[5]) };
  g.querySelector = s => s === 'rect' ? g.rect : s === 'text' ? g.text : g.title;
  frames.push(g);
}
const ids = { details: el({}), unzoom: el({}), matched: el({}), search: el({}) };
const docListeners = {};
global.document = { getElementById: id => ids[id], querySelectorAll: () => frames,
  addEventListener: (t, f) => { docListeners[t] = f; } };
let answer = process.argv[3] || '';
global.prompt = () => answer; global.alert = x => { throw new Error('alert ' + x); };
eval(script);
const W = 1200, XPAD = 10;
function check(cond, what) { if (!cond) { console.log('FAIL ' + what); process.exit(1); } }
check(frames.length > 2, 'frames parsed: ' + frames.length);
// initial layout equals the static one
for (const g of frames) check(Math.abs(+g.rect.attrs.width - (+g.getAttribute('data-w')) * (W - 2 * XPAD) / +frames[0].getAttribute('data-w')) < 0.2, 'initial width of ' + g.getAttribute('data-n'));
// zoom into the narrowest frame deeper than 1 that is drawn: it must span the width
const target = frames.filter(g => +g.getAttribute('data-d') >= 2).sort((a, b) => a.getAttribute('data-w') - b.getAttribute('data-w'))[0];
target.listeners.click();
check(Math.abs(+target.rect.attrs.width - (W - 2 * XPAD)) < 0.01, 'zoomed frame spans the width');
check(+target.rect.attrs.x === XPAD, 'zoomed frame starts at the margin');
check(ids.unzoom.style.opacity === 1, 'Reset Zoom shown');
for (const g of frames) {
  const x = +g.getAttribute('data-x'), w = +g.getAttribute('data-w'), tx = +target.getAttribute('data-x'), tw = +target.getAttribute('data-w');
  if (x + w <= tx || x >= tx + tw) check(g.style.display === 'none', 'outside frame hidden: ' + g.getAttribute('data-n'));
}
target.listeners.mouseover();
check(ids.details.textContent === target.title.textContent, 'details on hover');
docListeners.keydown({ key: 'Escape' });
check(ids.unzoom.style.opacity === 0, 'Esc resets the zoom');
check(frames.every(g => g.style.display === ''), 'all frames shown again');
if (answer) { ids.search.listeners.click(); console.log(ids.matched.textContent); }
console.log('ok ' + frames.length + ' frames; zoomed into ' + target.getAttribute('data-n'));
