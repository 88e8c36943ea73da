"""The inline stylesheet and script of the HTML report: no fonts, styles or scripts from the network, about 5 KB in all.

The script does one thing: zoom and pan the timelines (wheel zooms around the pointer, drag pans,
double-click or the reset button restores the whole window) by changing the viewBox of each
timeline's data layer, and relabels the time axis to match.
"""

CSS = """
:root { --fw:#4e79a7; --dev:#59a14f; --rt:#f28e2b; --hw:#e15759; --oth:#9c9c9c; --gap:#d62728; }
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; border-bottom: 1px solid #ddd; padding-bottom: .2em; margin-top: 2em; }
h3 { font-size: 1.05em; margin: 1.2em 0 .4em; }
table { border-collapse: collapse; margin: .4em 0 1em; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #ddd; padding: .2em .6em; } th { background: #f5f5f5; text-align: left; }
td.num { text-align: right; } .note { color: #666; font-size: .9em; }
.side { display: flex; flex-wrap: wrap; gap: 2em; align-items: flex-start; }
svg text { font: 11px system-ui, sans-serif; fill: #333; }
svg.tl { width: 100%; height: auto; border: 1px solid #ddd; background: #fff; cursor: grab; user-select: none; }
svg.tl:active { cursor: grabbing; }
.lane-framework { fill: var(--fw); } .lane-device { fill: var(--dev); } .lane-runtime_api { fill: var(--rt); }
.lane-hardware { fill: var(--hw); } .lane-other { fill: var(--oth); }
rect.ev { fill-opacity: .8; } rect.merged { fill-opacity: .55; }
rect.gap { fill: var(--gap); fill-opacity: .35; } rect.gapband { fill: var(--gap); fill-opacity: .06; }
rect.rowbg:nth-of-type(even) { fill: #fafafa; } rect.rowbg { fill: #fff; }
rect.bar.hw { fill: var(--hw); } rect.bar.idle { fill: var(--gap); } rect.bar.fwb { fill: var(--fw); }
.tl-controls button { font: inherit; margin-right: .4em; }
ul.warn { color: #8a5300; }
"""

JS = """
(function () {
  function fmt(ns) {
    var us = ns / 1000, a = Math.abs(us);
    if (a >= 1e6) return (us / 1e6).toFixed(3) + 's';
    if (a >= 1e3) return (us / 1e3).toFixed(3) + 'ms';
    return us.toFixed(3) + 'us';
  }
  document.querySelectorAll('svg.tl').forEach(function (svg) {
    var data = svg.querySelector('svg.tl-data'), axis = svg.querySelector('g.axis');
    var DW = +svg.dataset.w, span = +svg.dataset.span, H = +data.getAttribute('height');
    var v = { x: 0, w: DW }, drag = null;
    function draw() {
      data.setAttribute('viewBox', v.x + ' 0 ' + v.w + ' ' + H);
      var texts = axis.querySelectorAll('text');
      texts.forEach(function (t, i) {
        var f = i / (texts.length - 1);
        t.textContent = fmt((v.x + f * v.w) / DW * span);
      });
    }
    function at(e) { var r = data.getBoundingClientRect(); return v.x + (e.clientX - r.left) / r.width * v.w; }
    function clamp() { v.w = Math.min(DW, Math.max(DW / 1e7, v.w)); v.x = Math.min(DW - v.w, Math.max(0, v.x)); }
    function zoom(x, f) { var w = v.w * f; v.x = x - (x - v.x) * (w / v.w); v.w = w; clamp(); draw(); }
    svg.addEventListener('wheel', function (e) { e.preventDefault(); zoom(at(e), e.deltaY < 0 ? 0.8 : 1.25); }, { passive: false });
    svg.addEventListener('mousedown', function (e) { drag = { x: e.clientX, vx: v.x }; });
    window.addEventListener('mouseup', function () { drag = null; });
    svg.addEventListener('mousemove', function (e) {
      if (!drag) return;
      var r = data.getBoundingClientRect();
      v.x = drag.vx - (e.clientX - drag.x) / r.width * v.w; clamp(); draw();
    });
    svg.addEventListener('dblclick', function () { v = { x: 0, w: DW }; draw(); });
    var box = svg.parentNode.querySelector('.tl-controls');
    if (box) box.addEventListener('click', function (e) {
      var k = e.target.dataset.zoom; if (!k) return;
      if (k === 'reset') { v = { x: 0, w: DW }; draw(); } else zoom(v.x + v.w / 2, k === 'in' ? 0.5 : 2);
    });
    draw();
  });
})();
"""
