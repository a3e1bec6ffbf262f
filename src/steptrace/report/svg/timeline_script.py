"""The page's only script: the timeline's step menu, zoom, pan, selection and jumps.

Inline, no external resource, no network, nothing written outside the figure. It reads
the figure's ``data-*`` attributes and its JSON block (``timeline_svg.safe_json``), and
writes names only as text (``textContent``), never as markup. Without it, each figure
still shows its first step whole.
"""

SCRIPT = r"""
(function () {
  var NS = 'http://www.w3.org/2000/svg';
  function all(root, sel) { return Array.prototype.slice.call(root.querySelectorAll(sel)); }
  function ms(ns) {
    if (Math.abs(ns) >= 1e5 || ns === 0) return (ns / 1e6).toFixed(3) + ' ms';
    return (ns / 1e3).toFixed(1) + ' \u00b5s';
  }
  all(document, '.tl').forEach(function (fig) {
    var data = JSON.parse(fig.querySelector('.tl-data').textContent);
    var info = fig.querySelector('.info'), pick = fig.querySelector('.pick');
    var st = {k: 1, tx: 0};
    function view() {
      return all(fig, 'svg.tlv').filter(function (v) { return v.style.display !== 'none'; })[0];
    }
    function apply() {
      var v = view(), P = +v.dataset.plot, span = +v.dataset.span;
      st.k = Math.min(Math.max(st.k, 1), 400);
      st.tx = Math.min(0, Math.max(st.tx, P - P * st.k));
      v.querySelector('g.z').setAttribute('transform',
        'translate(' + st.tx + ',0) scale(' + st.k + ',1)');
      all(v, 'g.tx text').forEach(function (t) {
        var x = st.tx + st.k * t.dataset.x;
        if (x < 0 && x + st.k * t.dataset.w > 60) x = 0;
        t.setAttribute('x', x + 2);
      });
      all(v, 'text.tk').forEach(function (t) {
        t.textContent = ms((t.dataset.p - st.tx) / st.k * span / P);
      });
      var lo = -st.tx / st.k * span / P, hi = (P - st.tx) / st.k * span / P;
      fig.dataset.range = lo.toFixed(0) + ' ' + hi.toFixed(0);
    }
    function zoom(f, px) {
      var P = +view().dataset.plot;
      if (px === undefined) px = P / 2;
      if (f === 0) { st.k = 1; st.tx = 0; } else {
        f = Math.min(Math.max(f, 1 / st.k), 400 / st.k);
        st.tx = px - (px - st.tx) * f; st.k *= f;
      }
      apply();
    }
    function show(k) {
      all(fig, 'svg.tlv').forEach(function (v) {
        v.style.display = (+v.dataset.v === k) ? '' : 'none';
      });
      pick.value = String(k); st.k = 1; st.tx = 0; apply();
    }
    function describe(el) {
      if (!el.dataset || el.dataset.s === undefined) return null;
      var c = el.classList, d = el.dataset, when = ms(+d.s) + ' + ' + ms(+d.d);
      if (el.closest('g.cps')) return onPath(el, when);
      if (c.contains('gap')) {
        var read = d.r !== undefined ? ', while the batch is read' : '';
        return 'GPU idle, ' + data.causes[+d.c] + read + ': ' + when;
      }
      var kind = data.kinds[+(el.getAttribute('class').match(/k(\d+)/) || [0, 0])[1]];
      var name = data.names[+d.n];
      if (c.contains('band')) {
        return d.c + ' events under the resolution (' + kind + ', mostly ' + name +
          '), busy ' + ms(+d.b) + ': ' + when;
      }
      var launched = d.l !== undefined ? ' (launched at ' + ms(+d.l) + ')' : '';
      return kind + ' ' + name + ': ' + when + launched;
    }
    function onPath(el, when) {
      var d = el.dataset, kind = data.pathKinds[+el.getAttribute('class').match(/p(\d)/)[1]];
      var name = d.n !== undefined ? data.pathNames[+d.n] : '';
      if (d.c !== undefined) {
        return 'critical path, ' + d.c + ' segments merged, ' + kind + ' ' + ms(+d.k) +
          ' of them (the longest: ' + name + '): ' + when;
      }
      return 'critical path, ' + kind + (name ? ' ' + name : '') + ': ' + when;
    }
    function follow(el) {
      var v = view(), bar = null;
      if (el.dataset.t !== undefined) {
        bar = v.querySelector('g.grp rect.b[data-i="' + el.dataset.t + '"]');
      }
      if (bar) select(bar); else clear(v);
      el.classList.add('sel');
      info.textContent = describe(el) + (bar ? ', in ' + describe(bar) : '');
    }
    function clear(v) {
      all(v, '.sel').forEach(function (e) { e.classList.remove('sel'); });
      all(v, '.hl').forEach(function (e) { e.classList.remove('hl'); });
      all(v, '.lnk,.mark').forEach(function (e) { e.remove(); });
    }
    function line(g, x1, y1, x2, y2) {
      var l = document.createElementNS(NS, 'line');
      l.setAttribute('class', 'lnk');
      [['x1', x1], ['y1', y1], ['x2', x2], ['y2', y2]].forEach(function (a) {
        l.setAttribute(a[0], a[1]);
      });
      g.appendChild(l);
    }
    function select(el) {
      var v = view(), d = el.dataset, P = +v.dataset.plot, span = +v.dataset.span;
      var g = el.closest('g.grp');
      function mid(e) { return +e.getAttribute('y') + 5; }
      function at(ns) { return (+g.dataset.off) + ns * P / span; }
      clear(v); el.classList.add('sel');
      if (d.o !== undefined) {
        var owner = g.querySelector('rect.b[data-i="' + d.o + '"]');
        if (owner) {
          owner.classList.add('sel');
          var x = d.l !== undefined ? at(+d.l) : +owner.getAttribute('x');
          line(g, x, mid(owner), el.getAttribute('x'), mid(el));
        }
      } else if (d.i !== undefined) {
        all(g, 'rect.b[data-o="' + d.i + '"]').forEach(function (k) {
          k.classList.add('sel');
          if (k.dataset.l !== undefined) {
            line(g, at(+k.dataset.l), mid(el), k.getAttribute('x'), mid(k));
          }
        });
      }
      info.textContent = describe(el);
    }
    fig.tlMark = function (m) {
      var mark = data.marks[m];
      show(mark.view);
      var v = view(), P = +v.dataset.plot, span = +v.dataset.span;
      clear(v);
      var x = mark.start * P / span, w = Math.max((mark.end - mark.start) * P / span, 0.5);
      var r = document.createElementNS(NS, 'rect');
      [['class', 'mark'], ['x', x], ['y', 0], ['width', w],
       ['height', v.getAttribute('height')]].forEach(function (a) { r.setAttribute(a[0], a[1]); });
      v.querySelector('g.z').appendChild(r);
      mark.lanes.forEach(function (i) {
        all(v, '[data-lane="' + i + '"]').forEach(function (e) { e.classList.add('hl'); });
      });
      mark.names.forEach(function (n) {
        all(v, 'rect.b[data-n="' + n + '"]').forEach(function (e) { e.classList.add('sel'); });
      });
      st.k = Math.min(400, Math.max(1, P / (w * 1.1)));
      st.tx = -x * st.k + (P - w * st.k) / 2;
      apply();
      info.textContent = mark.label + ': ' + ms(mark.start) + ' to ' + ms(mark.end);
      fig.scrollIntoView();
    };
    pick.addEventListener('change', function () { show(+pick.value); });
    all(fig, 'button[data-zoom]').forEach(function (b) {
      b.addEventListener('click', function () { zoom(+b.dataset.zoom); });
    });
    fig.addEventListener('mouseover', function (e) {
      var text = describe(e.target);
      if (text) info.textContent = text;
    });
    fig.addEventListener('click', function (e) {
      var t = e.target;
      if (t.dataset && t.dataset.s !== undefined && t.closest('g.cps')) follow(t);
      else if (t.dataset && t.dataset.s !== undefined && !t.classList.contains('gap')) select(t);
    });
    function px(v, e) {
      var r = v.getBoundingClientRect();
      return (e.clientX - r.left) * (+v.dataset.width) / r.width - (+v.dataset.left);
    }
    all(fig, 'svg.tlv').forEach(function (v) {
      var drag = null;
      v.addEventListener('wheel', function (e) {
        e.preventDefault();
        zoom(e.deltaY < 0 ? 1.25 : 0.8, px(v, e));
      }, {passive: false});
      v.addEventListener('mousedown', function (e) { drag = {x: px(v, e), tx: st.tx}; });
      window.addEventListener('mousemove', function (e) {
        if (drag) { st.tx = drag.tx + px(v, e) - drag.x; apply(); }
      });
      window.addEventListener('mouseup', function () { drag = null; });
    });
    apply();
  });
  all(document, 'a.tl-jump').forEach(function (a) {
    a.addEventListener('click', function (e) {
      var fig = document.getElementById(a.dataset.fig + '-fig');
      if (fig && fig.tlMark) { e.preventDefault(); fig.tlMark(+a.dataset.mark); }
    });
  });
})();
"""
