
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
