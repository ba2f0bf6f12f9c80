/* perfsite: the "choose A and B" page (generator/site/chooser_page.py).
 *
 * Data files beside the page are scripts that call window.perfsiteChooser.{index,trial,pair,figures}; they are
 * loaded with <script> tags (fetch() is refused for pages opened from disk). Every verdict sentence, and every
 * ratio and interval but a kernel row's, comes from those files, computed by the analysis when the site was
 * built. A kernel row's ratio interval is computed here (layerRatio): precomputed, it made the data grow as
 * pairs of trials × layers. It is generator.analysis.stats.scaled_ratio_ci's closed form on the same inputs
 * (full-precision node times and spreads, the pair's borrowed spread, Python's z), checked row by row against
 * the compare page by tests/browser/test_chooser_browser.py. Text from the data (node names, op types,
 * advice) is set with textContent only.
 *
 * The choice lives in the address: #a=<version>&ac=<configuration>&b=<version>&bc=<configuration>, and the
 * layer whose detail panel is open in &layer=<name>.
 */
(function () {
  "use strict";

  var DASH = "\u2014";
  var KERNEL_ROWS = 200;  // rows shown before "show all"
  var store = { index: null, trials: {}, pairs: {}, figures: {}, details: {} };
  var waiting = {};
  var page = null;  // { root, base, state }

  function loaded(key, value) {
    var callbacks = waiting[key] || [];
    delete waiting[key];
    callbacks.forEach(function (done) { done(value); });
  }

  window.perfsiteChooser = {
    index: function (data) { store.index = data; loaded("index", data); },
    trial: function (n, data) { store.trials[n] = data; loaded("t-" + n, data); },
    pair: function (i, j, data) { store.pairs[i + "-" + j] = data; loaded("v-" + i + "-" + j, data); },
    figures: function (n, k, data) { store.figures[n + "-" + k] = data; loaded("f-" + n + "-" + k, data); },
    details: function (id, data) { store.details[id] = data; loaded("d-" + id, data); }
  };

  function have(key) {
    if (key === "index") return store.index;
    var kind = key.charAt(0), rest = key.slice(2);
    return { t: store.trials, v: store.pairs, f: store.figures, d: store.details }[kind][rest];
  }

  function load(key) {
    return new Promise(function (resolve, reject) {
      var value = have(key);
      if (value) { resolve(value); return; }
      if (waiting[key]) { waiting[key].push(resolve); return; }
      waiting[key] = [resolve];
      var script = document.createElement("script");
      script.src = page.base + key + ".js";
      script.onerror = function () { delete waiting[key]; reject(new Error(script.src + " did not load")); };
      document.head.appendChild(script);
    });
  }

  // ---- formatting: the pages' `num` filter (generator.numbers.num): 3 significant digits with trailing zeros
  // kept (1.90), whole numbers with thousands separators from 100 up. (It gave 4 digits in places: 47.05.)
  function fmt(value) {
    if (value === null || value === undefined || !isFinite(value)) return DASH;
    if (Math.abs(value) >= 100) return Math.round(value).toLocaleString("en-US");
    var rounded = Number(value.toPrecision(3));
    if (rounded === 0) return "0";
    if (Math.abs(rounded) < 1e-4) return rounded.toExponential(2);
    return rounded.toFixed(Math.max(0, 2 - Math.floor(Math.log10(Math.abs(rounded)))));
  }
  function pct(value) { return value === null || value === undefined ? DASH : (100 * value).toFixed(1) + " %"; }
  // [point, low, high, significant, note] of a ratio, or [point, low, high] of a layer row (its interval
  // excludes 1 when significant), [point] of a layer row of a pair shown without a verdict, or 0/null where
  // there is none.
  var WIDE_RATIO = 1.5;

  function ratioCells(r) {
    if (!r) return [DASH, DASH];
    if (r.length === 1) return [r[0].toFixed(2), "not compared"];
    var significant = r.length > 3 ? r[3] : r[1] > 1 || r[2] < 1;
    // A large ratio whose interval still holds 1 is not "no difference": its interval is too wide to tell
    // (compare_page.ratio_cell's rule).
    if (!significant && (r[0] >= WIDE_RATIO || r[0] <= 1 / WIDE_RATIO))
      return [r[0].toFixed(2), r[1].toFixed(2) + "\u2013" + r[2].toFixed(2) + ", too wide to tell"];
    if (!significant) return [r[0].toFixed(2), "no significant difference"];
    return [r[0].toFixed(2), r[1].toFixed(2) + "\u2013" + r[2].toFixed(2)];
  }

  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = text;
    if (cls) node.className = cls;
    return node;
  }

  function table(headers, rows, numeric) {
    // No class: mkdocs-material styles `table:not([class])`; the data attribute keeps perfsite.js from
    // setting up the table a second time, as Tablesort is set up here.
    var t = el("table");
    t.dataset.perfsiteSortable = "1";
    var head = t.createTHead().insertRow();
    headers.forEach(function (h, i) {
      var th = el("th", h);
      if (numeric[i]) th.style.textAlign = "right";
      head.appendChild(th);
    });
    var body = t.createTBody();
    rows.forEach(function (cells) {
      var tr = body.insertRow();
      cells.forEach(function (c, i) {
        var td = tr.insertCell();
        if (c instanceof Node) td.appendChild(c); else td.textContent = c === null || c === undefined ? DASH : c;
        if (numeric[i]) td.style.textAlign = "right";
      });
    });
    if (typeof Tablesort !== "undefined") new Tablesort(t);
    var wrap = el("div", null, "md-typeset__scrollwrap");
    var inner = el("div", null, "md-typeset__table");
    inner.appendChild(t);
    wrap.appendChild(inner);
    return wrap;
  }

  function section(name) { return page.root.parentNode.querySelector('[data-section="' + name + '"]') ||
                                  document.querySelector('[data-section="' + name + '"]'); }
  function fill(name, nodes) {
    var target = section(name);
    if (!target) return;
    target.textContent = "";
    nodes.forEach(function (n) { target.appendChild(n); });
  }

  // ---- the choice ----
  function trialsOf(version) {
    return store.index.trials.map(function (t, n) { return n; })
      .filter(function (n) { return store.index.trials[n].version === version; });
  }
  function findTrial(version, config) {
    var found = trialsOf(version).filter(function (n) { return store.index.trials[n].config === config; });
    return found.length ? found[0] : null;
  }

  function readHash() {
    var out = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (part) {
      var kv = part.split("=");
      if (kv.length === 2) out[decodeURIComponent(kv[0])] = decodeURIComponent(kv[1].replace(/\+/g, " "));
    });
    var a = out.a !== undefined ? findTrial(out.a, out.ac) : null;
    var b = out.b !== undefined ? findTrial(out.b, out.bc) : null;
    return a !== null && b !== null ? [a, b, out.layer === undefined ? null : out.layer] : null;
  }

  function writeHash(a, b) {
    var ta = store.index.trials[a], tb = store.index.trials[b];
    var hash = "#a=" + encodeURIComponent(ta.version) + "&ac=" + encodeURIComponent(ta.config) +
      "&b=" + encodeURIComponent(tb.version) + "&bc=" + encodeURIComponent(tb.config) +
      (page.state.layer ? "&layer=" + encodeURIComponent(page.state.layer) : "");
    // A choice is a step in the browser's history (Back undoes it); the address the page opened at is not.
    if (location.hash !== hash) {
      if (page.opened) history.pushState(null, "", hash); else history.replaceState(null, "", hash);
    }
    page.opened = true;
  }

  function select(side, field) { return page.root.querySelector('select[data-side="' + side + '"][data-field="' + field + '"]'); }

  function fillSelects(side, trial) {
    var t = store.index.trials[trial];
    var versions = select(side, "version"), configs = select(side, "config");
    versions.textContent = "";
    store.index.versions.forEach(function (v) {
      if (!trialsOf(v).length) return;
      var o = el("option", v); o.value = v; o.selected = v === t.version; versions.appendChild(o);
    });
    configs.textContent = "";
    trialsOf(t.version).forEach(function (n) {
      var c = store.index.trials[n].config;
      var o = el("option", c); o.value = c; o.selected = n === trial; configs.appendChild(o);
    });
  }

  function chosenFromSelects(side, changed) {
    var version = select(side, "version").value;
    var config = select(side, "config").value;
    var n = findTrial(version, config);
    if (n === null) {
      // The configuration does not exist for the newly chosen version: keep the one closest in the list.
      var other = page.state[side] !== undefined ? store.index.trials[page.state[side]].config : null;
      n = findTrial(version, other);
      if (n === null) n = trialsOf(version)[0];
    }
    return changed === "version" && n === null ? trialsOf(version)[0] : n;
  }

  function choose(a, b, layer) {
    page.state = { a: a, b: b, layer: layer || null };
    fillSelects("a", a);
    fillSelects("b", b);
    writeHash(a, b);
    var status = page.root.querySelector(".perfsite-chooser-status");
    if (a === b) {
      status.textContent = "A and B are the same trial: choose another version or configuration for one of them.";
      ["verdict", "time", "types", "kernels", "layer", "overhead", "agreement", "advice"].forEach(function (s) { fill(s, []); });
      return;
    }
    status.textContent = "Loading\u2026";
    var ta = store.index.trials[a], tb = store.index.trials[b];
    var vi = store.index.versions.indexOf(ta.version), vj = store.index.versions.indexOf(tb.version);
    var samePair = vi === vj;
    var chunk = Math.floor(b / store.index.figuresPerFile);
    var wanted = [load("t-" + a), load("t-" + b), load("f-" + a + "-" + chunk),
                  samePair ? Promise.resolve(null) : load("v-" + vi + "-" + vj)];
    Promise.all(wanted).then(function (got) {
      if (page.state.a !== a || page.state.b !== b) return;  // a newer choice is loading
      render(a, b, got[0], got[1], got[2][b], got[3]);
      status.textContent = "A: " + ta.version + " at " + ta.config + " \u00b7 B: " + tb.version + " at " + tb.config;
      status.dataset.ready = a + "-" + b;
    }).catch(function (e) { status.textContent = "The figures did not load: " + e.message; });
  }

  // ---- the sections ----
  function render(a, b, nodesA, nodesB, figures, pair) {
    var ta = store.index.trials[a], tb = store.index.trials[b];
    renderVerdict(ta, tb, figures, pair);
    renderTime(ta, tb);
    renderTypes(figures, nodesA, nodesB);
    var rows = pair ? kernelRows(pair, figures, nodesA, nodesB) : [];
    renderKernels(pair, rows, ta, tb, a, b);
    var open = page.state.layer && rows.filter(function (r) { return r.layer === page.state.layer; })[0];
    if (open) openLayer(open, a, b); else renderLayerHint(pair);
    renderOverhead(pair, rows);
    var here = pair ? atChosen(pair, ta, tb) : null;
    renderAgreement(pair, here);
    renderAdvice(pair, here);
  }

  // The advice, agreement and verdicts of the version pair at the chosen configuration: both trials' when A and
  // B ran at one configuration, else B's, else A's (each was computed there when the site was built, by the
  // compare pages' analysis); null when the two versions share neither, and the page says where its figures
  // come from instead.
  function atChosen(pair, ta, tb) {
    var at = pair.at || {};
    var config = [tb.config, ta.config].filter(function (c) { return at[c]; })[0];
    return config === undefined ? null : { config: config, same: ta.config === tb.config, figures: at[config] };
  }

  function whereComputed(pair, here, ta, tb) {
    if (here && here.same) return "at " + here.config + ", the configuration both were chosen at";
    if (here) return "at " + here.config + ": A and B were chosen at different configurations (A at " + ta.config +
      ", B at " + tb.config + "), and these compare the two versions at one configuration both ran, B's or else A's";
    return "at " + (pair.config || "one configuration") + ": neither chosen configuration was profiled in both versions";
  }

  function renderVerdict(ta, tb, figures, pair) {
    var out = [];
    var p = el("p");
    p.appendChild(el("strong", "Latency " + store.index.percentile + ": "));
    p.appendChild(document.createTextNode(figures.latencyText + "."));
    out.push(p);
    p = el("p");
    p.appendChild(el("strong", "Throughput: "));
    p.appendChild(document.createTextNode(figures.throughputText + "."));
    out.push(p);
    var here = pair ? atChosen(pair, ta, tb) : null;
    if (here && here.same) {
      // The findings of this choice (its verdicts and advice, settled together when the site was built).
      var states = Object.keys(here.figures.verdict || {}).map(function (m) { return here.figures.verdict[m][1]; })
        .concat(here.figures.advice.map(function (a) { return a[2]; })).filter(function (x) { return x !== null; });
      var settled = states.filter(function (x) { return x; }).length;
      out.unshift(el("p", settled + " of " + states.length + " findings of this choice settled (its verdicts and advice; " +
        "unsettled ones say why).", "perfsite-chooser-findings"));
    }
    if (here && here.same && here.figures.verdict) {
      ["latency", "throughput"].forEach(function (m) {
        var v = here.figures.verdict[m];
        if (v) out.push(el("p", (m === "latency" ? "Latency" : "Throughput") + " verdict: " + v[0] +
          (v[1] ? " (settled)." : " (unsettled: " + v[2] + ")."), "perfsite-chooser-note"));
      });
    }
    var notes = figures.notes.slice();
    if (figures.paired) notes.push("A and B were measured in the same rounds of one run: their ratio is compared round by round.");
    if (ta.config !== tb.config) notes.push("A and B ran at different configurations: the ratios compare the two trials as they ran, not the versions at one setting.");
    [ta, tb].forEach(function (t) { if (t.budget) notes.push(t.budget); });
    var agreement = here ? here.figures.agreement : pair ? pair.agreement : [];
    if (agreement.some(function (g) { return g[5] === false; }))
      notes.push("Some outputs disagree with their reference beyond the tolerance (the spec's, or perfsite's default of cosine \u2265 0.99; see Output agreement): the speed of a broken model is not a result.");
    notes.forEach(function (n) { out.push(el("p", n, "perfsite-chooser-note")); });
    fill("verdict", out);
  }

  function renderTime(ta, tb) {
    var rows = [["A", ta], ["B", tb]].map(function (x) {
      var t = x[1].timing || {};
      return [x[0], x[1].version, x[1].config, fmt(t.latency), fmt(t.latencyLow) + "\u2013" + fmt(t.latencyHigh),
              fmt(t.throughput), fmt(t.throughputLow) + "\u2013" + fmt(t.throughputHigh),
              t.processes === undefined ? DASH : String(t.processes), t.note || ""];
    });
    var lat = "Latency " + store.index.percentile + " (ms)";
    var nodes = [table(["", "Version", "Configuration", lat, "95 % CI", "Throughput (items/s)", "95 % CI", "Processes", "Note"],
                       rows, [false, false, false, true, true, true, true, true, false])];
    nodes.push(bars("Latency " + store.index.percentile + " (ms), 95 % CI", [ta, tb], "latency"));
    nodes.push(bars("Throughput (items/s), 95 % CI", [ta, tb], "throughput"));
    fill("time", nodes);
  }

  // A small horizontal bar chart in SVG: one bar per trial with its interval as a whisker.
  function bars(title, trials, metric) {
    var NS = "http://www.w3.org/2000/svg";
    var width = 560, rowH = 28, left = 24, right = 90, top = 24;
    var values = trials.map(function (t) { return t.timing || {}; });
    var max = Math.max.apply(null, values.map(function (v) { return v[metric + "High"] || v[metric] || 0; })) || 1;
    var svg = document.createElementNS(NS, "svg");
    var height = top + rowH * trials.length + 6;
    svg.setAttribute("viewBox", "0 0 " + width + " " + height);
    svg.setAttribute("width", width);
    svg.setAttribute("height", height);
    svg.setAttribute("class", "perfsite-chooser-bars");
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", title);
    var caption = document.createElementNS(NS, "text");
    caption.setAttribute("x", 0); caption.setAttribute("y", 14); caption.textContent = title;
    svg.appendChild(caption);
    var scale = (width - left - right) / max;
    values.forEach(function (v, i) {
      var y = top + i * rowH;
      var label = document.createElementNS(NS, "text");
      label.setAttribute("x", 0); label.setAttribute("y", y + 16); label.textContent = i === 0 ? "A" : "B";
      svg.appendChild(label);
      var rect = document.createElementNS(NS, "rect");
      rect.setAttribute("x", left); rect.setAttribute("y", y + 4);
      rect.setAttribute("width", Math.max(0, (v[metric] || 0) * scale)); rect.setAttribute("height", rowH - 10);
      rect.setAttribute("class", i === 0 ? "perfsite-bar-a" : "perfsite-bar-b");
      svg.appendChild(rect);
      if (v[metric + "Low"] !== null && v[metric + "Low"] !== undefined) {
        var line = document.createElementNS(NS, "line");
        line.setAttribute("x1", left + v[metric + "Low"] * scale); line.setAttribute("x2", left + v[metric + "High"] * scale);
        line.setAttribute("y1", y + rowH / 2 - 1); line.setAttribute("y2", y + rowH / 2 - 1);
        line.setAttribute("class", "perfsite-bar-ci");
        svg.appendChild(line);
      }
      var value = document.createElementNS(NS, "text");
      value.setAttribute("x", left + (v[metric + "High"] || v[metric] || 0) * scale + 6); value.setAttribute("y", y + 16);
      value.textContent = fmt(v[metric], metric === "latency" ? 3 : 4);
      svg.appendChild(value);
    });
    var fig = el("figure", null, "perfsite-chooser-figure");
    fig.appendChild(svg);
    return fig;
  }

  function renderTypes(figures, nodesA, nodesB) {
    if (!figures.types.length) {
      fill("types", [el("p", "No per-node profile of one of the two trials: no layer-type comparison.")]);
      return;
    }
    var none = [0, 0, DASH, 0];
    var rows = figures.types.map(function (r) {
      var a = nodesA.ops[r[0]] || none, b = nodesB.ops[r[0]] || none, cells = ratioCells(r[1]);
      return [r[0], fmt(a[0]), fmt(b[0]), fmt(b[0] - a[0]), cells[0], cells[1], pct(a[1]), pct(b[1]), a[2], b[2]];
    });
    var nodes = [table(["Layer type", "A (\u00b5s)", "B (\u00b5s)", "\u0394 B \u2212 A (\u00b5s)", "B / A", "95 % CI",
                        "Share of A", "Share of B", "Nodes in A by precision", "Nodes in B by precision"],
                       rows, [false, true, true, true, true, true, true, true, false, false])];
    var ta = nodesA.accounting, tb = nodesB.accounting;
    if (ta && tb) {
      // The compare pages' "how the times add up": kernels (the profiler's cost removed) and the rest of the
      // measured latency (generator.analysis.accounting).
      nodes.push(table(["How the times add up (\u00b5s per inference)", "A", "B"], [
        ["Kernels (the layer types above, the profiler's own cost removed)", fmt(ta[0]), fmt(tb[0])],
        ["Outside the kernels (executor, allocation, binding, copies: measured \u2212 kernels)", fmt(ta[1]),
         fmt(tb[1])],
        ["Measured latency (median, without the profiler)", fmt(ta[2]), fmt(tb[2])]
      ], [false, true, true]));
      [["A", ta], ["B", tb]].forEach(function (side) {
        if (side[1][3]) nodes.push(el("p", side[0] + "'s parts do not add up: " + side[1][3] + "."));
      });
    }
    fill("types", nodes);
  }

  function sum(names, nodes) {
    var total = 0, missing = 0, byPrecision = {};
    names.forEach(function (name) {
      var n = nodes.nodes[name];
      if (!n) { missing += 1; return; }
      total += n[0];
      var p = n[1] || "other";
      byPrecision[p] = (byPrecision[p] || 0) + n[0];
    });
    var precision = null, most = -1;
    Object.keys(byPrecision).sort().forEach(function (p) { if (byPrecision[p] > most) { most = byPrecision[p]; precision = p; } });
    return { time: total, missing: missing, precision: precision };
  }

  // One side of a layer's ratio, as generator.analysis.layer_match.member_time: the summed time of the row's
  // nodes that ran in the trial and its relative standard error (the nodes' spreads over the profiling
  // processes taken as independent), summed in the same order; null when none of them ran.
  function rowSide(names, nodes) {
    var total = 0, variance = 0, present = 0;
    names.forEach(function (name) {
      var n = nodes.nodes[name];
      if (!n) return;
      total += n[0];
      variance += n[3] * n[3];
      present += 1;
    });
    if (!present) return null;
    return { time: total, se: total <= 0 ? 0 : Math.sqrt(variance / Math.max(nodes.iterations, 1)) / total };
  }

  // A matched layer's [point, low, high], as generator.analysis.stats.scaled_ratio_ci: the pair's spread
  // borrowed from the latency ratio and both sides' standard errors, combined in quadrature on the log scale.
  function layerRatio(r, figures, nodesA, nodesB) {
    if ((figures.spread === null && !figures.unjudged) || r[2] !== "layer" || r[3]) return null;
    var a = rowSide(r[5], nodesA), b = rowSide(r[6], nodesB);
    if (!a || !b || a.time <= 0 || b.time <= 0) return null;
    if (figures.unjudged) return [b.time / a.time];  // a pair shown without a verdict: "not compared"
    var z = store.index.z;
    var sigma = Math.sqrt(figures.spread * figures.spread + a.se * a.se + b.se * b.se);
    var point = b.time / a.time;
    return [point, point * Math.exp(-z * sigma), point * Math.exp(z * sigma)];
  }

  function kernelRows(pair, figures, nodesA, nodesB) {
    return pair.rows.map(function (r) {
      var a = sum(r[5], nodesA), b = sum(r[6], nodesB);
      return { layer: r[0], op: r[1], kind: r[2], only: r[3], note: r[4], a: a, b: b,
               ratio: layerRatio(r, figures, nodesA, nodesB), execA: r[5], execB: r[6] };
    }).sort(function (x, y) {
      return Math.max(y.a.time, y.b.time) - Math.max(x.a.time, x.b.time) || (x.layer < y.layer ? -1 : x.layer > y.layer ? 1 : 0);
    });
  }

  function renderKernels(pair, rows, ta, tb, a, b) {
    if (!pair) {
      fill("kernels", [el("p", "A and B are the same version: every layer is the same; the inference time above compares the two configurations.")]);
      return;
    }
    if (!pair.rows.length) {
      fill("kernels", [el("p", "No kernel table: " + (pair.reason || "no configuration both versions profiled") + ".")]);
      return;
    }
    var missing = rows.reduce(function (n, r) { return n + r.a.missing + r.b.missing; }, 0);
    var body = rows.map(function (r) {
      var cells = ratioCells(r.ratio);
      var note = r.note || (r.only === "a" ? "only in A" : r.only === "b" ? "only in B" : "");
      if (r.a.missing || r.b.missing) note = (note ? note + "; " : "") + (r.a.missing + r.b.missing) + " kernel(s) not in the chosen trials";
      return [layerButton(r, a, b), r.op, fmt(r.a.time), fmt(r.b.time), fmt(r.b.time - r.a.time), cells[0], cells[1],
              r.a.precision || DASH, r.b.precision || DASH, note];
    });
    var nodes = [];
    nodes.push(el("p", "Click a layer's name for its details in A and B. Layers were matched at " + (pair.config || "one configuration") + "; times are those of the chosen trials (A at " +
                  ta.config + ", B at " + tb.config + ")." + (missing ? " " + missing + " matched kernels did not run in the chosen trials." : "")));
    var headers = ["Layer", "Op type", "A (\u00b5s)", "B (\u00b5s)", "\u0394 (\u00b5s)", "B / A", "95 % CI", "Precision A", "Precision B", "Note"];
    var numeric = [false, false, true, true, true, true, true, false, false, false];
    var shown = body.length > KERNEL_ROWS ? body.slice(0, KERNEL_ROWS) : body;
    nodes.push(table(headers, shown, numeric));
    if (shown.length < body.length) {
      var more = el("button", "Show all " + body.length.toLocaleString("en-US") + " rows", "md-button");
      more.type = "button";
      more.addEventListener("click", function () {
        nodes[1].replaceWith(table(headers, body, numeric));
        more.remove();
      });
      nodes.push(more);
    }
    fill("kernels", nodes);
  }

  // ---- the layer detail panel: what a layer is in A and in B, differences marked ----
  var NOT_RECORDED = "not recorded (measured before perfsite recorded layer details: run again with --force)";

  function layerButton(row, a, b) {
    var button = el("button", row.layer, "perfsite-layer-open");
    button.type = "button";
    button.title = "Show what this layer is in A and in B";
    button.addEventListener("click", function () {
      page.state.layer = row.layer;
      writeHash(page.state.a, page.state.b);
      openLayer(row, a, b, true);
    });
    return button;
  }

  function renderLayerHint(pair) {
    fill("layer", pair && pair.rows.length ? [el("p", "Click a layer's name in the kernel table above: its executed kernels and the " +
      "nodes of each model file they compute (attributes, shapes, element types, weights and quantization parameters) " +
      "are shown here side by side, with what differs marked.")] : []);
    delete section("layer").dataset.layer;  // no layer shown (Back after opening one)
  }

  function detailsOf(trial, names) {
    var nodes = store.trials[trial].nodes;
    var chunks = {};
    names.forEach(function (name) { var n = nodes[name]; if (n && n[2] !== null && n[2] !== undefined) chunks[n[2]] = true; });
    return Promise.all(Object.keys(chunks).map(function (id) { return load("d-" + id); })).then(function (got) {
      // No detail file (none of the layer's kernels ran in the chosen trial) says nothing about how old the
      // results are: only a file written before perfsite recorded layer details makes them "not recorded".
      var kernels = [], layers = {}, recorded = got.every(function (c) { return c.recorded; });
      // A detail file is shared by the trials of one version at the same shapes: the time is this trial's.
      names.forEach(function (name) {
        got.forEach(function (c) {
          var k = c.kernels[name];
          if (k) kernels.push([name, k[0], k[1], k[2], nodes[name][0]].concat(k.slice(3)));
        });
      });
      // A chunk holds the model nodes of all its kernels: keep those of this layer's kernels only.
      kernels.forEach(function (k) {
        k[9].forEach(function (node) {
          got.forEach(function (c) { if (c.layers[node]) layers[node] = c.layers[node]; });
        });
      });
      return { kernels: kernels, layers: layers, recorded: recorded, missing: names.length - kernels.length };
    });
  }

  // `reveal`: opened by the reader's click, so the panel is brought into view (it opened 2,000 px below).
  function openLayer(row, a, b, reveal) {
    fill("layer", [el("p", "Loading the details of " + row.layer + "\u2026")]);
    if (reveal) section("layer").scrollIntoView({ block: "start" });
    Promise.all([detailsOf(a, row.execA), detailsOf(b, row.execB)]).then(function (got) {
      if (page.state.a !== a || page.state.b !== b || page.state.layer !== row.layer) return;
      renderLayer(row, got[0], got[1]);
      var target = section("layer");
      target.dataset.layer = row.layer;
    }).catch(function (e) { fill("layer", [el("p", "The layer's details did not load: " + e.message)]); });
  }

  function typed(types, shapes, i) {
    var t = types && types[i] ? types[i] : "?", s = shapes && shapes[i] !== undefined && shapes[i] !== null ? shapes[i] : null;
    return t + " " + (s === null ? "[?]" : "[" + s.join(", ") + "]");
  }
  function tensors(types, shapes) {
    var n = Math.max(types ? types.length : 0, shapes ? shapes.length : 0);
    var out = [];
    for (var i = 0; i < n; i += 1) out.push(typed(types, shapes, i));
    return out.join("; ") || DASH;
  }
  function weightText(w) {
    var parts = [(w.dtype || "?") + " " + (w.shape || "[?]")];
    if (w.role) parts.push(w.role + (w.value !== undefined ? " = " + w.value : ""));
    if (w.scale !== undefined) parts.push("scale " + w.scale);
    if (w.zero_point !== undefined) parts.push("zero point " + w.zero_point);
    if (w.axis !== undefined) parts.push("axis " + w.axis);
    return parts.join(" \u00b7 ");
  }

  // The node of a side that does the layer's work: the most operations, float and integer (a QDQ Conv runs as
  // integer work, its QuantizeLinear as float), else the first that is not a conversion.
  var CONVERSIONS = ["QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "Cast"];
  function operations(l) { return (l[9] || 0) + (l[10] || 0); }
  function principal(side) {
    var keys = Object.keys(side.layers).sort(function (x, y) { return (side.layers[x][2] || 0) - (side.layers[y][2] || 0); });
    var best = null;
    keys.forEach(function (k) {
      var l = side.layers[k], b = best === null ? null : side.layers[best];
      if (b === null || operations(l) > operations(b) ||
          (operations(l) === operations(b) && CONVERSIONS.indexOf(b[0]) >= 0 && CONVERSIONS.indexOf(l[0]) < 0)) best = k;
    });
    return best;
  }

  // Rows "what | A | B" comparing the two sides; a row whose two values differ is marked.
  function comparison(sa, sb) {
    var rows = [];
    function add(what, va, vb) { rows.push([what, va === undefined ? DASH : va, vb === undefined ? DASH : vb]); }
    add("Kernels", sa.kernels.map(function (k) { return k[1]; }).join(", ") || DASH, sb.kernels.map(function (k) { return k[1]; }).join(", ") || DASH);
    // Each value once, in kernel order: two kernels on one provider are not a different provider.
    function distinct(side, i) {
      var seen = [];
      side.kernels.forEach(function (k) { var v = k[i] || "?"; if (seen.indexOf(v) < 0) seen.push(v); });
      return seen.join(", ") || DASH;
    }
    add("Precision", distinct(sa, 3), distinct(sb, 3));
    add("Provider", distinct(sa, 2), distinct(sb, 2));
    var pa = principal(sa), pb = principal(sb);
    var la = pa ? sa.layers[pa] : null, lb = pb ? sb.layers[pb] : null;
    add("Model node doing the work", pa ? pa + " (" + la[0] + ")" : DASH, pb ? pb + " (" + lb[0] + ")" : DASH);
    add("Nodes of the model file", String(Object.keys(sa.layers).length), String(Object.keys(sb.layers).length));
    function attrs(l, side) { return l ? (l[3] === null ? null : l[3]) : {}; }
    var aa = attrs(la, sa), ab = attrs(lb, sb);
    if (aa === null || ab === null) {
      add("Attributes", aa === null ? NOT_RECORDED : DASH, ab === null ? NOT_RECORDED : DASH);
    } else {
      var names = Object.keys(aa).concat(Object.keys(ab).filter(function (k) { return !(k in aa); })).sort();
      names.forEach(function (k) { add("Attribute " + k, aa[k], ab[k]); });
    }
    var ina = la ? la[4].length : 0, inb = lb ? lb[4].length : 0;
    for (var i = 0; i < Math.max(ina, inb); i += 1) add("Input " + i, la && i < ina ? typed(la[5], la[4], i) : undefined, lb && i < inb ? typed(lb[5], lb[4], i) : undefined);
    var outa = la ? la[6].length : 0, outb = lb ? lb[6].length : 0;
    for (var j = 0; j < Math.max(outa, outb); j += 1) add("Output " + j, la && j < outa ? typed(la[7], la[6], j) : undefined, lb && j < outb ? typed(lb[7], lb[6], j) : undefined);
    function mainWeights(l) {
      if (!l) return [];
      if (l[8] === null) return null;
      return l[8].filter(function (w) { return !w.role; });
    }
    var wa = mainWeights(la), wb = mainWeights(lb);
    if (wa === null || wb === null) {
      add("Weights", wa === null ? NOT_RECORDED : DASH, wb === null ? NOT_RECORDED : DASH);
    } else {
      for (var w = 0; w < Math.max(wa.length, wb.length); w += 1)
        add("Weight " + (w + 1), wa[w] ? wa[w].name + ": " + weightText(wa[w]) : undefined, wb[w] ? wb[w].name + ": " + weightText(wb[w]) : undefined);
      add("Weight element types", wa.map(function (x) { return x.dtype; }).join(", ") || DASH, wb.map(function (x) { return x.dtype; }).join(", ") || DASH);
    }
    function work(l) {
      if (!l || (l[9] === null && l[10] === null)) return DASH;
      return fmt(l[9] || 0) + " FLOPs + " + fmt(l[10] || 0) + " integer ops";
    }
    add("Operations of that node", work(la), work(lb));
    return rows;
  }

  function kernelTable(side, label) {
    var rows = side.kernels.map(function (k) {
      return [label, k[0], k[1], k[2] || DASH, k[3] || DASH, fmt(k[4]), tensors(k[6], k[5]), tensors(k[8], k[7]), k[9].join(", ") || DASH];
    });
    return rows;
  }

  function nodeRows(side, label) {
    return Object.keys(side.layers).sort(function (x, y) { return (side.layers[x][2] || 0) - (side.layers[y][2] || 0); }).map(function (key) {
      var l = side.layers[key];
      var attrs = l[3] === null ? NOT_RECORDED : Object.keys(l[3]).sort().map(function (k) { return k + "=" + l[3][k]; }).join(", ") || DASH;
      var weights = l[8] === null ? NOT_RECORDED : l[8].map(function (w) { return w.name + ": " + weightText(w); }).join("; ") || DASH;
      return [label, key, l[0] + (l[1] ? " (" + l[1] + ")" : ""), attrs, l[5] === null ? tensors(null, l[4]) : tensors(l[5], l[4]),
              l[7] === null ? tensors(null, l[6]) : tensors(l[7], l[6]), weights];
    });
  }

  function renderLayer(row, sa, sb) {
    var out = [el("h3", row.layer)];
    var rows = comparison(sa, sb);
    var differing = rows.filter(function (r) { return r[1] !== r[2]; }).length;
    out.push(el("p", differing + " of " + rows.length + " properties differ between A and B (marked \u2260)." +
      (sa.missing + sb.missing ? " " + (sa.missing + sb.missing) + " of the layer's kernels did not run in the chosen trials." : "") +
      (!sa.recorded || !sb.recorded ? " Attributes and weights of results measured before perfsite recorded them are shown as not recorded." : "")));
    var compared = table(["", "A", "B"], rows.map(function (r) { return [(r[1] !== r[2] ? "\u2260 " : "") + r[0], r[1], r[2]]; }), [false, false, false]);
    compared.querySelectorAll("tbody tr").forEach(function (tr, i) { if (rows[i][1] !== rows[i][2]) tr.className = "perfsite-differs"; });
    compared.classList.add("perfsite-layer-compare");
    out.push(compared);
    out.push(el("h4", "Executed kernels"));
    out.push(table(["Side", "Kernel", "Op", "Provider", "Precision", "Time (\u00b5s)", "Inputs", "Outputs", "Model nodes"],
                   kernelTable(sa, "A").concat(kernelTable(sb, "B")), [false, false, false, false, false, true, false, false, false]));
    out.push(el("h4", "Nodes of the model files"));
    out.push(table(["Side", "Node", "Op", "Attributes", "Inputs", "Outputs", "Weights"],
                   nodeRows(sa, "A").concat(nodeRows(sb, "B")), [false, false, false, false, false, false, false]));
    fill("layer", out);
  }

  function renderOverhead(pair, rows) {
    if (!pair || !pair.rows.length) { fill("overhead", [el("p", "No kernel table, so no overhead figures.")]); return; }
    var byOp = {};
    rows.filter(function (r) { return r.kind === "overhead"; }).forEach(function (r) {
      var o = byOp[r.op] || (byOp[r.op] = { a: 0, b: 0, n: 0 });
      o.a += r.a.time; o.b += r.b.time; o.n += 1;
    });
    var ops = Object.keys(byOp).sort(function (x, y) { return Math.max(byOp[y].a, byOp[y].b) - Math.max(byOp[x].a, byOp[x].b); });
    if (!ops.length) { fill("overhead", [el("p", "Neither version spends time converting precisions (no QuantizeLinear, DequantizeLinear or inserted Cast kernels).")]); return; }
    var total = ops.reduce(function (t, op) { return [t[0] + byOp[op].a, t[1] + byOp[op].b]; }, [0, 0]);
    var rowsOut = ops.map(function (op) { return [op, String(byOp[op].n), fmt(byOp[op].a), fmt(byOp[op].b)]; });
    rowsOut.push(["Total", "", fmt(total[0]), fmt(total[1])]);
    fill("overhead", [el("p", "Kernels that only convert between precisions, added by quantization or inserted by onnxruntime, in the chosen trials."),
                      table(["Op type", "Kernels", "A (\u00b5s)", "B (\u00b5s)"], rowsOut, [false, true, true, true])]);
  }

  function renderAgreement(pair, here) {
    var agreement = here ? here.figures.agreement : pair ? pair.agreement : [];
    if (!pair || !agreement.length) {
      fill("agreement", [el("p", pair ? "No output agreement was recorded between these two versions." :
                                     "A and B are the same version: their outputs are the same model's.")]);
      return;
    }
    var ta = store.index.trials[page.state.a], tb = store.index.trials[page.state.b];
    var rows = agreement.map(function (g) {
      return [g[0], g[1], g[2], g[3] === null ? DASH : g[3].toFixed(4), fmt(g[4]),
              g[5] === null ? "no tolerance set" : g[5] ? "within tolerance" : "beyond tolerance"];
    });
    fill("agreement", [el("p", "Outputs of each version against its reference on the same inputs, recorded " + whereComputed(pair, here, ta, tb) + "."),
                       table(["Version", "Reference", "Output", "Cosine", "Max abs difference", "Tolerance"], rows,
                             [false, false, false, true, true, false])]);
  }

  function renderAdvice(pair, here) {
    if (!pair) { fill("advice", [el("p", "No advice: A and B are the same version.")]); return; }
    var ta = store.index.trials[page.state.a], tb = store.index.trials[page.state.b];
    // Advice is about one configuration: none is shown for another than the ones chosen (it once was, and
    // spoke of a configuration the reader had not picked).
    if (!here) {
      fill("advice", [el("p", "No advice at the chosen configurations: neither " + ta.config +
        (ta.config === tb.config ? "" : " nor " + tb.config) + " ran in both versions. Choose a configuration both ran.")]);
      return;
    }
    var advice = here.figures.advice;
    var where = "Advice for these two versions, computed " + whereComputed(pair, here, ta, tb) + ".";
    if (!advice.length) { fill("advice", [el("p", where + " No advice rule fired.")]); return; }
    var list = el("ul");
    advice.forEach(function (a) {
      var li = el("li");
      li.appendChild(el("strong", a[0] === "warning" ? "Warning: " : "Note: "));
      li.appendChild(document.createTextNode(a[1]));
      if (a[2] === false) li.appendChild(el("span", " unsettled: " + a[3], "perfsite-unsettled"));
      list.appendChild(li);
    });
    fill("advice", [el("p", where), list]);
  }

  // ---- wiring ----
  function onPage() {
    var root = document.querySelector(".perfsite-chooser");
    if (!root) return;
    var link = document.querySelector(".perfsite-chooser-data a");
    if (!link) return;
    var href = link.getAttribute("href");
    page = { root: root, base: href.slice(0, href.length - "index.js".length), state: {} };
    load("index").then(function () {
      var chosen = readHash() || store.index.default || [0, 1];
      root.querySelectorAll("select").forEach(function (s) {
        s.addEventListener("change", function () {
          var side = s.dataset.side;
          var n = chosenFromSelects(side, s.dataset.field);
          choose(side === "a" ? n : page.state.a, side === "b" ? n : page.state.b);
        });
      });
      root.querySelector(".perfsite-chooser-swap").addEventListener("click", function () { choose(page.state.b, page.state.a); });
      function fromAddress() {
        var fromHash = readHash();
        if (fromHash && (fromHash[0] !== page.state.a || fromHash[1] !== page.state.b || fromHash[2] !== page.state.layer))
          choose(fromHash[0], fromHash[1], fromHash[2]);
      }
      window.addEventListener("hashchange", fromAddress);
      window.addEventListener("popstate", fromAddress);
      choose(chosen[0], chosen[1], chosen[2]);
    }).catch(function (e) {
      root.querySelector(".perfsite-chooser-status").textContent = "The figures did not load: " + e.message;
    });
  }

  if (typeof window.document$ !== "undefined" && window.document$.subscribe) {
    window.document$.subscribe(onPage);
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", onPage);
  } else {
    onPage();
  }
})();
