/* ntrace report: the timelines (redrawn from embedded data on every zoom) and the sortable, filterable tables. */
(function () {
  'use strict';
  var COLORS = { framework: '#4e79a7', device: '#59a14f', runtime_api: '#f28e2b', hardware: '#e15759', other: '#9c9c9c' };
  var IDLE = '#edc948', STEP = '#555', LABEL_W = 230, AXIS_H = 30, ROW_H = 16, RIGHT = 12, MAX_EXACT_IN_VIEW = 6000, MIN_VIEW = 20;

  function cum(d) { var o = new Float64Array(d.length), s = 0; for (var i = 0; i < d.length; i++) { s += d[i]; o[i] = s; } return o; }
  function plus(a, d) { var o = new Float64Array(a.length); for (var i = 0; i < a.length; i++) o[i] = a[i] + d[i]; return o; }
  function lower(arr, x) { var lo = 0, hi = arr.length; while (lo < hi) { var m = (lo + hi) >> 1; if (arr[m] < x) lo = m + 1; else hi = m; } return lo; }
  function fmt(ns) {
    var us = ns / 1000, a = Math.abs(us);
    if (a >= 1e6) return (us / 1e6).toFixed(3) + 's';
    if (a >= 1e3) return (us / 1e3).toFixed(3) + 'ms';
    return us.toFixed(3) + 'us';
  }
  function exact(ns) { return (ns / 1000).toFixed(3) + 'us'; }  // a time since the window start, to the ns
  /* Round tick values: a 1-2-5 step giving about n ticks, labelled in the unit of the view's end with the decimals the step needs. */
  function ticks(a, b, n) {
    var raw = Math.max((b - a) / n, 1), p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
    var step = (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
    var u = b >= 1e9 ? [1e9, 's'] : b >= 1e6 ? [1e6, 'ms'] : b >= 1e3 ? [1e3, 'us'] : [1, 'ns'];
    var dec = Math.max(0, Math.ceil(-Math.log10(step / u[0]) - 1e-9)), out = [];
    for (var k = Math.ceil(a / step); k * step <= b; k++) out.push([k * step, (k * step / u[0]).toFixed(dec) + u[1]]);
    return out;
  }
  function ids(ex, k) {
    var out = '';
    if (ex.c && ex.c[k] >= 0) out += '\ncorrelation ' + ex.c[k];
    if (ex.x && ex.x[k] >= 0) out += (out ? ' \u00b7 ' : '\n') + 'External id ' + ex.x[k];
    return out;
  }
  function decode(d) {
    d.rows.forEach(function (r) {
      if (r.ex) { r.ts = cum(r.ex.t); r.end = plus(r.ts, r.ex.d); }
      r.lv.forEach(function (l) { l.ts = cum(l.t); l.end = plus(l.ts, l.e); });
    });
    Object.keys(d.gaps).forEach(function (k) { var g = d.gaps[k]; g.ts = cum(g.t); g.end = plus(g.ts, g.d); });
  }

  function Timeline(box) {
    var d = JSON.parse(box.querySelector('script.tl-json').textContent); decode(d);
    var canvas = box.querySelector('canvas'), ctx = canvas.getContext('2d'), tip = box.querySelector('.tl-tip');
    var state = box.querySelector('.tl-drawn'), search = box.querySelector('input.tl-search'), found = box.querySelector('.tl-found');
    var H = AXIS_H + d.rows.length * ROW_H + 2, v = { a: 0, b: d.span }, match = null, plotW = 1, drag = null;
    var m = new RegExp('[#&]' + box.id + '=(\\d+):(\\d+)').exec(location.hash);
    if (m && +m[2] > +m[1]) { v = { a: +m[1], b: +m[2] }; focus = box; }
    function px(t) { return LABEL_W + (t - v.a) / (v.b - v.a) * plotW; }
    function at(x) { return v.a + (x - LABEL_W) / plotW * (v.b - v.a); }
    function mode(r, nsPerPx) {
      if (r.ex && (r.lv.length === 0 || lower(r.ts, v.b) - lower(r.end, v.a) <= MAX_EXACT_IN_VIEW || nsPerPx < r.lv[r.lv.length - 1].r)) return null;
      for (var i = 0; i < r.lv.length; i++) if (r.lv[i].r <= nsPerPx) return r.lv[i];
      return r.lv[r.lv.length - 1];
    }
    function draw() {
      var cssW = canvas.clientWidth || 1200, dpr = window.devicePixelRatio || 1;
      plotW = Math.max(cssW - LABEL_W - RIGHT, 10);
      canvas.width = Math.round(cssW * dpr); canvas.height = Math.round(H * dpr); canvas.style.height = H + 'px';
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0); ctx.clearRect(0, 0, cssW, H);
      ctx.font = '11px system-ui, sans-serif'; ctx.textBaseline = 'middle';
      var nsPerPx = (v.b - v.a) / plotW, drawn = { view: [v.a, v.b], plot: [LABEL_W, plotW], ticks: [], rows: {} };
      d.rows.forEach(function (r, i) {
        var y = AXIS_H + i * ROW_H;
        ctx.fillStyle = i % 2 ? '#fafafa' : '#fff'; ctx.fillRect(0, y, cssW, ROW_H);
        ctx.fillStyle = '#333';
        var label = r.depth ? '\u21b3 depth ' + r.depth : r.lane + ' \u00b7 ' + r.track;
        ctx.save(); ctx.beginPath(); ctx.rect(0, y, LABEL_W - 6, ROW_H); ctx.clip();
        ctx.fillText(label, r.depth ? 14 : 4, y + ROW_H / 2); ctx.restore();
      });
      var tk = ticks(v.a, v.b, Math.max(2, Math.floor(plotW / 130)));
      ctx.strokeStyle = '#e4e4e4'; ctx.fillStyle = '#333';
      tk.forEach(function (t) {
        var x = px(t[0]), w = ctx.measureText(t[1]).width;
        ctx.beginPath(); ctx.moveTo(x, AXIS_H - 4); ctx.lineTo(x, H); ctx.stroke();
        ctx.textAlign = x + w / 2 > cssW - 2 ? 'right' : x - w / 2 < LABEL_W ? 'left' : 'center';
        ctx.fillText(t[1], ctx.textAlign === 'right' ? cssW - 2 : x, 9);
        drawn.ticks.push(t[1]);
      });
      ctx.textAlign = 'left';
      ctx.save(); ctx.beginPath(); ctx.rect(LABEL_W, 0, plotW, H); ctx.clip();
      var labelEnd = -1;  // a step's label is drawn only where the one before it has ended
      d.steps.forEach(function (s) {
        if (s[1] < v.a || s[0] > v.b) return;
        var x = px(s[0]), label = s[2].replace('ProfilerStep', 'step ');
        ctx.strokeStyle = STEP; ctx.setLineDash([3, 3]);
        ctx.beginPath(); ctx.moveTo(x, 14); ctx.lineTo(x, H); ctx.stroke(); ctx.setLineDash([]);
        if (x + 2 > labelEnd) { ctx.fillStyle = STEP; ctx.fillText(label, x + 2, 22); labelEnd = x + 8 + ctx.measureText(label).width; }
      });
      d.rows.forEach(function (r, i) {
        var y = AXIS_H + i * ROW_H, rec = r.lane === 'hardware' ? [] : null, g = d.gaps[i], k, x0, x1;
        if (g) {
          ctx.fillStyle = IDLE;
          for (k = lower(g.end, v.a); k < g.ts.length && g.ts[k] <= v.b; k++) {
            x0 = px(g.ts[k]); x1 = px(g.end[k]);
            if (x1 - x0 < 0.5) continue;
            ctx.fillRect(x0, y, x1 - x0, ROW_H);
            if (rec && rec.length < 4000) rec.push(['gap', +x0.toFixed(2), +x1.toFixed(2)]);
          }
        }
        var lv = mode(r, nsPerPx), ts = lv ? lv.ts : r.ts, end = lv ? lv.end : r.end;
        if (!ts) return;
        var color = COLORS[r.lane] || COLORS.other, lastX = -1;
        ctx.fillStyle = color;
        for (k = lower(end, v.a); k < ts.length && ts[k] <= v.b; k++) {
          x0 = px(ts[k]); x1 = Math.max(px(end[k]), x0 + 0.6);
          var hit = !match || (!lv && match[r.ex.k[k]]);
          ctx.globalAlpha = lv ? (match ? 0.15 : 0.6) : (hit ? 0.9 : 0.2);
          if (x1 > lastX + 0.1 || !lv) ctx.fillRect(x0, y + 2, x1 - x0, ROW_H - 4);
          lastX = x1;
          if (rec && rec.length < 4000) rec.push([lv ? 'block' : 'ev', +x0.toFixed(2), +x1.toFixed(2)]);
          if (!lv && x1 - x0 > 40) {
            ctx.globalAlpha = 1; ctx.fillStyle = '#fff';
            ctx.save(); ctx.beginPath(); ctx.rect(Math.max(x0, LABEL_W), y, x1 - Math.max(x0, LABEL_W) - 2, ROW_H); ctx.clip();
            ctx.fillText(d.names[r.ex.k[k]], Math.max(x0, LABEL_W) + 3, y + ROW_H / 2); ctx.restore();
            ctx.fillStyle = color;
          }
        }
        ctx.globalAlpha = 1;
        if (rec) drawn.rows[i] = { mode: lv ? 'level r=' + lv.r : 'exact', rects: rec };
      });
      ctx.restore();
      if (match) drawn.matches = found_hits.length;
      if (state) state.textContent = JSON.stringify(drawn);
      box.dataset.view = v.a + ':' + v.b;
    }
    function clamp() {
      var w = Math.min(d.span, Math.max(MIN_VIEW, v.b - v.a)), a = Math.min(d.span - w, Math.max(0, v.a));
      v = { a: a, b: a + w };
    }
    function zoom(t, f) { v = { a: t - (t - v.a) * f, b: t + (v.b - t) * f }; clamp(); draw(); }
    function local(e) { var rc = canvas.getBoundingClientRect(); return { x: e.clientX - rc.left, y: e.clientY - rc.top }; }
    function hover(e) {
      var p = local(e), i = Math.floor((p.y - AXIS_H) / ROW_H), r = d.rows[i];
      if (!r || p.x < LABEL_W) { tip.hidden = true; return; }
      var t = at(p.x), tol = 2 * (v.b - v.a) / plotW, lv = mode(r, (v.b - v.a) / plotW), text = null, k;
      var ts = lv ? lv.ts : r.ts, end = lv ? lv.end : r.end;
      if (ts) {
        k = lower(end, t - tol);
        if (k < ts.length && ts[k] <= t + tol) {
          text = lv ? lv.c[k].toLocaleString() + ' events merged at this zoom\nstart ' + exact(ts[k]) + '  length ' + fmt(end[k] - ts[k])
            : d.names[r.ex.k[k]] + '\nstart ' + exact(ts[k]) + '  duration ' + fmt(r.ex.d[k]) + ids(r.ex, k) + (d.args[r.ex.a[k]] ? '\n' + d.args[r.ex.a[k]] : '');
        }
      }
      var g = d.gaps[i];
      if (!text && g) {
        k = lower(g.end, t);
        if (k < g.ts.length && g.ts[k] <= t) text = 'hardware idle ' + fmt(g.d[k]) + '\nfrom ' + exact(g.ts[k]);
      }
      if (!text) { tip.hidden = true; return; }
      tip.textContent = text; tip.hidden = false;
      tip.style.left = Math.min(p.x + 12, canvas.clientWidth - 320) + 'px'; tip.style.top = (p.y + 14) + 'px';
    }
    canvas.addEventListener('wheel', function (e) { e.preventDefault(); zoom(at(local(e).x), e.deltaY < 0 ? 0.8 : 1.25); }, { passive: false });
    canvas.addEventListener('mousedown', function (e) { drag = { x: e.clientX, v: v }; });
    window.addEventListener('mouseup', function () { drag = null; });
    canvas.addEventListener('mousemove', function (e) {
      if (!drag) { hover(e); return; }
      var dt = (e.clientX - drag.x) / plotW * (drag.v.b - drag.v.a);
      v = { a: drag.v.a - dt, b: drag.v.b - dt }; clamp(); draw();
    });
    canvas.addEventListener('mouseleave', function () { tip.hidden = true; });
    canvas.addEventListener('dblclick', function () { v = { a: 0, b: d.span }; draw(); });
    box.querySelector('.tl-controls').addEventListener('click', function (e) {
      var z = e.target.dataset && e.target.dataset.zoom; if (!z) return;
      if (z === 'reset') { v = { a: 0, b: d.span }; draw(); } else zoom((v.a + v.b) / 2, z === 'in' ? 0.5 : 2);
    });
    function hits() {
      var out = [];
      d.rows.forEach(function (r) { if (r.ex) for (var k = 0; k < r.ts.length; k++) if (match[r.ex.k[k]]) out.push([r.ts[k], r.end[k]]); });
      return out.sort(function (p, q) { return p[0] - q[0]; });
    }
    var found_hits = [];
    if (search) {
      search.addEventListener('input', function () {
        var q = search.value.toLowerCase();
        match = q ? d.names.map(function (n) { return n.toLowerCase().indexOf(q) >= 0; }) : null;
        found_hits = match ? hits() : [];
        found.textContent = match ? found_hits.length.toLocaleString() + ' matching events (Enter: next)' : '';
        draw();
      });
      search.addEventListener('keydown', function (e) {
        if (e.key !== 'Enter' || !found_hits.length) return;
        var mid = (v.a + v.b) / 2, k = lower(found_hits.map(function (h) { return h[0]; }), mid + 1);
        var h = found_hits[k < found_hits.length ? k : 0], pad = Math.max(h[1] - h[0], 1000);
        v = { a: h[0] - pad, b: h[1] + pad }; clamp(); draw();
      });
    }
    var q = new RegExp('[#&]' + box.id + '-q=([^&]*)').exec(location.hash);  // a search given in the URL
    if (q && search) { search.value = decodeURIComponent(q[1]); search.dispatchEvent(new Event('input')); }
    window.addEventListener('resize', draw);
    box.addEventListener('redraw', draw);
    draw();
  }

  /* Tables: click a header to sort (numbers by their exact value), type to filter, show the rows past the first N. */
  function Table(table) {
    var body = table.tBodies[0], dir = {};
    table.querySelectorAll('th').forEach(function (th, c) {
      th.addEventListener('click', function () {
        var rows = Array.prototype.slice.call(body.rows), num = rows.length && rows[0].cells[c].hasAttribute('data-v');
        dir[c] = -(dir[c] || (num ? 1 : -1));
        rows.sort(function (p, q) {
          var x = num ? +p.cells[c].dataset.v : p.cells[c].textContent, y = num ? +q.cells[c].dataset.v : q.cells[c].textContent;
          return (x < y ? -1 : x > y ? 1 : 0) * dir[c];
        });
        rows.forEach(function (r) { body.appendChild(r); });
        show();
      });
    });
    var wrap = table.parentNode, filter = wrap.querySelector('input.tfilter'), more = wrap.querySelector('button.tmore');
    var top = +(table.dataset.top || 0), all = false;
    function show() {
      var q = filter ? filter.value.toLowerCase() : '', n = 0;
      Array.prototype.forEach.call(body.rows, function (r) {
        var ok = !q || r.textContent.toLowerCase().indexOf(q) >= 0;
        if (ok) n++;
        r.hidden = !ok || (!all && !q && top > 0 && n > top);
      });
      if (more) more.hidden = all || !!q || !top || body.rows.length <= top;
    }
    if (filter) filter.addEventListener('input', show);
    if (more) more.addEventListener('click', function () { all = true; show(); });
    show();
  }

  /* A fragment ending in &solo shows that timeline alone (for screenshots): every element off its path to the body is hidden. */
  function solo(el) {
    for (; el && el !== document.body; el = el.parentNode)
      Array.prototype.forEach.call(el.parentNode.children, function (c) { if (c !== el && c.tagName !== 'SCRIPT') c.style.display = 'none'; });
  }
  var focus = null;  // the timeline a URL fragment zoomed, shown once the page is laid out
  document.querySelectorAll('div.timeline').forEach(Timeline);
  document.querySelectorAll('table.sortable').forEach(Table);
  if (focus && /&solo$/.test(location.hash)) { solo(focus); focus.dispatchEvent(new Event('redraw')); } else if (focus) focus.scrollIntoView();
})();
