// Oja console: the overview's charts, drawn with uPlot from what the page
// carries in data attributes (no inline script: the CSP forbids it).
//
// #rates: the rate history in data-chart (JSON: [{pair, points: [[unix
// ms, "rate"]]}]); an EventSource on data-stream adds each rate_update.
// Rates are decimal strings in both; they become numbers here only to be
// drawn.
//
// #activity: quotes per minute by the status they reached (JSON: [{t: unix
// seconds, c: {status: count}}]).
(function () {
  "use strict";
  if (typeof uPlot === "undefined") {
    return;
  }
  var colours = ["#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#0891b2"];
  var act = document.getElementById("activity");
  if (act) {
    var minutes = JSON.parse(act.getAttribute("data-chart") || "[]");
    var statuses = ["pending", "awaiting_payment", "completed", "cancelled", "expired"];
    var cols = [minutes.map(function (m) { return m.t; })].concat(statuses.map(function (st) {
      return minutes.map(function (m) { return m.c[st] || 0; });
    }));
    new uPlot({
      width: Math.max(320, act.clientWidth || 800),
      height: 200,
      scales: { x: { time: true } },
      series: [{}].concat(statuses.map(function (st, i) {
        return { label: st, stroke: colours[i % colours.length], width: 2 };
      }))
    }, cols, act);
  }
  var el = document.getElementById("rates");
  if (!el) {
    return;
  }
  var status = document.getElementById("rates-status");
  var history = JSON.parse(el.getAttribute("data-chart") || "[]");
  var names = history.map(function (s) { return s.pair; });
  var last = names.map(function () { return null; });
  var rows = [];
  history.forEach(function (s, i) {
    s.points.forEach(function (p) { rows.push({ t: p[0] / 1000, i: i, v: parseFloat(p[1]) }); });
  });
  rows.sort(function (a, b) { return a.t - b.t; });
  var data = [[]].concat(names.map(function () { return []; }));
  function push(t) {
    data[0].push(t);
    for (var k = 0; k < names.length; k++) {
      data[k + 1].push(last[k]);
    }
  }
  rows.forEach(function (r) { last[r.i] = r.v; push(r.t); });
  var opts = {
    width: Math.max(320, el.clientWidth || 800),
    height: 260,
    scales: { x: { time: true } },
    series: [{}].concat(names.map(function (n, i) {
      return { label: n, stroke: colours[i % colours.length], width: 2, spanGaps: true, scale: n };
    })),
    axes: [{}].concat(names.map(function (n, i) {
      return {
        scale: n, side: i % 2 === 0 ? 3 : 1, grid: { show: i === 0 }, size: 80,
        stroke: colours[i % colours.length],
        values: function (u, ticks) {
          return ticks.map(function (v) { return v === null ? "" : String(+v.toPrecision(6)); });
        }
      };
    }))
  };
  var chart = new uPlot(opts, data, el);
  window.addEventListener("resize", function () {
    chart.setSize({ width: Math.max(320, el.clientWidth), height: 260 });
  });
  var source = new EventSource(el.getAttribute("data-stream"));
  source.addEventListener("open", function () { status.textContent = "live"; });
  source.addEventListener("error", function () {
    status.textContent = "the live rates are not reaching this page; retrying…";
  });
  source.addEventListener("rate_update", function (ev) {
    var u = JSON.parse(ev.data);
    var i = names.indexOf(u.from + "/" + u.to);
    if (i < 0) {
      return;
    }
    last[i] = parseFloat(u.rate);
    push(Date.now() / 1000);
    if (data[0].length > 2000) {
      data = data.map(function (col) { return col.slice(-2000); });
    }
    chart.setData(data);
    status.textContent = "live · " + u.from + "/" + u.to + " " + u.rate;
  });
})();
