/* perfsite: render the inline Vega-Lite charts and make tables sortable.
 *
 * Each chart is a <div class="perfsite-chart" data-chart="ID"> followed by <script type="application/json"
 * id="ID"> holding its spec. Rendering runs on first load and again on every page mkdocs-material's instant
 * navigation swaps in (its `document$` observable), so a chart never depends on inline scripts re-running.
 * An element is marked once handled, so a page is never rendered twice.
 */
(function () {
  "use strict";

  var EMBED_OPTIONS = {
    renderer: "svg",
    actions: { export: true, source: false, compiled: false, editor: false },
    // At every width, labels of one axis keep 4 px apart (Vega thins the rest): a timeline's axis at 1,280 px
    // read "1,0001,2001,400" with a pixel or none between its labels.
    config: { axis: { labelSeparation: 4 } },
  };

  // Charts follow the reader's colour scheme (mkdocs-material's palette toggle sets data-md-color-scheme on
  // the body): on the dark scheme they use vega-themes' dark theme on the page's own background, and the few
  // colours the chart specs use for text and thin lines turn light (DARK_COLOURS).
  // Colours of text and thin lines in the chart specs (generator/site/charts*.py) and what they become on the
  // dark scheme, with a contrast of 4.5:1 or more against the page.
  var DARK_COLOURS = { "#1b1e23": "#e8e8e8", "#c62828": "#ff8a80", "#6a1b9a": "#ce93d8", "#1565c0": "#90caf9" };

  function darkScheme() {
    return document.body && document.body.getAttribute("data-md-color-scheme") === "slate";
  }

  function embedOptions() {
    if (!darkScheme()) return EMBED_OPTIONS;
    return Object.assign({}, EMBED_OPTIONS, {
      theme: "dark", config: Object.assign({}, EMBED_OPTIONS.config, { background: null, text: { color: "#e8e8e8" } }),
    });
  }

  function forScheme(spec) {
    if (!darkScheme()) return spec;
    var text = JSON.stringify(spec);
    Object.keys(DARK_COLOURS).forEach(function (c) { text = text.split('"' + c + '"').join('"' + DARK_COLOURS[c] + '"'); });
    return JSON.parse(text);
  }

  // On a scheme toggle, draw every chart again in the new scheme (its data and signals come from the spec).
  var schemeWatch = null;
  function watchScheme() {
    if (schemeWatch || !document.body || typeof MutationObserver === "undefined") return;
    schemeWatch = new MutationObserver(function () {
      Array.prototype.forEach.call(document.querySelectorAll(".perfsite-chart[data-chart]"), function (el) {
        if (!el.__perfsiteView) return;
        var threshold = el.__perfsiteThresholdValue;
        el.__perfsiteView.finalize();
        el.__perfsiteView = undefined;
        delete el.dataset.perfsiteRendered;
        el.__perfsiteRedraw = threshold;
        var control = el.previousElementSibling;
        if (control && control.classList.contains("perfsite-threshold")) control.remove();
        var downloads = el.parentNode.querySelector('.perfsite-downloads[data-for="' + el.dataset.chart + '"]');
        if (downloads) downloads.remove();
      });
      renderCharts(document);
    });
    schemeWatch.observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
  }

  // The spec is the <script type="application/json" id="ID"> right after the chart's div, wrapped in a
  // one-element array. Material's instant navigation re-inserts inline scripts without their attributes
  // (id included), so fall back to the next sibling script.
  function specElement(el) {
    var byId = document.getElementById(el.dataset.chart);
    if (byId && byId.tagName === "SCRIPT") return byId;
    var next = el.nextElementSibling;
    return next && next.tagName === "SCRIPT" ? next : null;
  }

  // The chart library is loaded only on pages that hold a chart (generator/site/vendor.py CHART_LIBRARY), from
  // the folder this script came from, one script after the other (vega-lite needs vega, vega-embed both).
  var SCRIPT_SRC = document.currentScript ? document.currentScript.src : "";
  var CHART_LIBRARY = ["vega.min.js", "vega-lite.min.js", "vega-embed.min.js"];
  var library = null;

  function loadChartLibrary() {
    if (typeof vegaEmbed === "function") return Promise.resolve();
    if (library) return library;
    var base = SCRIPT_SRC.slice(0, SCRIPT_SRC.lastIndexOf("/") + 1) + "vendor/";
    library = CHART_LIBRARY.reduce(function (previous, name) {
      return previous.then(function () {
        return new Promise(function (resolve, reject) {
          var script = document.createElement("script");
          script.src = base + name;
          script.onload = resolve;
          script.onerror = function () { reject(new Error(name + " did not load")); };
          document.head.appendChild(script);
        });
      });
    }, Promise.resolve());
    return library;
  }

  function renderCharts(root) {
    if (!root.querySelector(".perfsite-chart[data-chart]")) return;
    loadChartLibrary().then(function () { drawCharts(root); }, function () { drawCharts(root); });
  }

  function drawCharts(root) {
    var charts = root.querySelectorAll(".perfsite-chart[data-chart]");
    Array.prototype.forEach.call(charts, function (el) {
      if (el.dataset.perfsiteRendered) return;
      el.dataset.perfsiteRendered = "1";
      var source = specElement(el);
      if (!source || typeof vegaEmbed !== "function") {
        el.textContent = "Chart unavailable: its data or the chart library did not load.";
        return;
      }
      var data = JSON.parse(source.textContent);
      var spec = Array.isArray(data) ? data[0] : data;
      addDownloads(el, source, spec);
      vegaEmbed(el, forScheme(narrowed(spec, el.clientWidth || document.documentElement.clientWidth)),
                embedOptions()).then(function (result) {
        // The Vega view, for tests and readers' consoles: el.__perfsiteView.signal("latency_threshold").
        el.__perfsiteView = result.view;
        var meta = spec.usermeta && spec.usermeta.perfsiteThreshold;
        if (meta) {
          var start = el.__perfsiteRedraw !== undefined ? el.__perfsiteRedraw : meta.value;
          thresholdControl(el, result.view, Object.assign({}, meta, { value: start }), chartRows(spec));
        }
      }).catch(function (error) {
        el.textContent = "Chart failed to render: " + error.message;
      });
    });
  }

  // On a narrow screen (a phone held upright) a chart keeps its title, axes and legends inside its frame: its
  // legends go under the plot in as many columns as fit (beside it they took half the width, and a row of
  // them ran out of the frame), its titles wrap, axis labels that would touch are thinned (a throughput axis
  // read "1,0001,5002,000") and slanted band labels stand upright. The page's data and figures are unchanged;
  // the specs in the page stay as built (their CSV and JSON downloads, the snapshot tests).
  var NARROW_PX = 600;
  var TITLE_CHAR_PX = 7.5;  // a 13 px bold title's average character
  var LEGEND_COLUMN_PX = 150;

  function isChart(node) {
    return Boolean(node.mark || node.layer || node.concat || node.hconcat || node.vconcat || node.facet);
  }

  function wrapped(text, chars) {
    if (typeof text !== "string" || text.length <= chars) return text;
    var lines = [""];
    text.split(" ").forEach(function (word) {
      var last = lines[lines.length - 1];
      if (last && (last + " " + word).length > chars) lines.push(word);
      else lines[lines.length - 1] = last ? last + " " + word : word;
    });
    return lines;
  }

  // The spec's structure copied, its data tables shared (a timeline's thousands of rows are not copied).
  function structure(node, key) {
    if (!node || typeof node !== "object" || key === "data" || key === "datasets") return node;
    if (Array.isArray(node)) return node.map(function (n) { return structure(n); });
    var out = {};
    Object.keys(node).forEach(function (k) { out[k] = structure(node[k], k); });
    return out;
  }

  function narrowed(spec, width) {
    if (!width || width >= NARROW_PX) return spec;
    var copy = structure(spec);
    // Legends under a plot start where the plot does, after its y labels: half the width is what is sure.
    var columns = Math.max(1, Math.floor(width / 2 / LEGEND_COLUMN_PX));
    var labels = Math.floor(width * 0.4);
    var chars = Math.max(16, Math.floor(width / TITLE_CHAR_PX));
    function legend(l) {
      if (l.orient !== "top" && l.orient !== "bottom") l.orient = "bottom";
      l.direction = "horizontal";
      l.columns = l.columns ? Math.min(l.columns, columns) : columns;
      l.labelLimit = Math.min(l.labelLimit || LEGEND_COLUMN_PX, LEGEND_COLUMN_PX - 30);
      l.titleLimit = width - 20;
    }
    function axis(a) {
      a.labelLimit = Math.min(a.labelLimit || labels, labels);
      if (a.labelAngle) { a.labelAngle = -90; a.labelOverlap = true; }
    }
    (function walk(node, key) {
      if (!node || typeof node !== "object") return;
      if (Array.isArray(node)) { node.forEach(function (n) { walk(n); }); return; }
      if (key === "legend") legend(node);
      if (key === "axis") axis(node);
      if ((key === "x" || key === "y") && typeof node.title === "string") node.title = wrapped(node.title, chars + 8);
      if (isChart(node) && node.title) {
        if (typeof node.title === "string") node.title = wrapped(node.title, chars);
        else node.title.text = wrapped(node.title.text, chars);
      }
      Object.keys(node).forEach(function (k) { if (k !== "data" && k !== "datasets") walk(node[k], k); });
    })(copy);
    copy.config = Object.assign({}, copy.config);
    copy.config.legend = Object.assign({}, copy.config.legend);
    legend(copy.config.legend);
    copy.config.axis = Object.assign({}, copy.config.axis, { labelLimit: labels });
    // Several legends under one plot stack, not side by side (Vega's layout of legends that share an orient).
    copy.config.legend.layout = { bottom: { anchor: "start", direction: "vertical" },
                                  top: { anchor: "start", direction: "vertical" } };
    return copy;
  }

  // "Download data: CSV · JSON" under each chart: the chart's own inline data turned into files in the
  // browser. Blob URLs need no server and no network, so the links also work from file:// and offline.
  function chartRows(spec) {
    var tables = [];
    (function walk(node) {
      if (!node || typeof node !== "object") return;
      if (Array.isArray(node)) { node.forEach(walk); return; }
      if (node.data && Array.isArray(node.data.values)) tables.push(node.data.values);
      if (node.datasets) Object.keys(node.datasets).sort().forEach(function (k) { tables.push(node.datasets[k]); });
      Object.keys(node).sort().forEach(function (k) { if (k !== "data" && k !== "datasets") walk(node[k]); });
    })(spec);
    // A chart's data is its largest table; the small ones are labels and rules (thresholds, machine limits).
    return tables.reduce(function (best, rows) { return rows.length > best.length ? rows : best; }, []);
  }

  // Untrusted text (node names) must not run as a spreadsheet formula: prefix "'" to =, +, -, @, tab, CR.
  function csvCell(value) {
    if (value === null || value === undefined) return "";
    var text = typeof value === "object" ? JSON.stringify(value) : String(value);
    if (typeof value === "string" && /^[=+\-@\t\r]/.test(text)) text = "'" + text;
    return /[",\r\n]/.test(text) ? '"' + text.replace(/"/g, '""') + '"' : text;
  }

  function toCsv(rows) {
    var columns = [];
    rows.forEach(function (row) {
      Object.keys(row).forEach(function (k) { if (columns.indexOf(k) < 0) columns.push(k); });
    });
    var lines = [columns.map(csvCell).join(",")];
    rows.forEach(function (row) {
      lines.push(columns.map(function (k) { return csvCell(row[k]); }).join(","));
    });
    return lines.join("\r\n") + "\r\n";
  }

  function downloadLink(label, text, type, filename) {
    var a = document.createElement("a");
    a.textContent = label;
    a.href = URL.createObjectURL(new Blob([text], { type: type }));
    a.download = filename;
    return a;
  }

  function addDownloads(el, source, spec) {
    var rows = chartRows(spec);
    if (!rows.length) return;
    var page = (location.pathname.split("/").pop() || "index").replace(/\.html?$/, "") || "index";
    var base = page + "." + el.dataset.chart;
    var p = document.createElement("p");
    p.className = "perfsite-downloads";
    p.dataset.for = el.dataset.chart;
    p.appendChild(document.createTextNode("Download data: "));
    p.appendChild(downloadLink("CSV", toCsv(rows), "text/csv", base + ".csv"));
    p.appendChild(document.createTextNode(" \u00b7 "));
    p.appendChild(downloadLink("JSON", JSON.stringify(rows, null, 1) + "\n", "application/json", base + ".json"));
    source.parentNode.insertBefore(p, source.nextSibling);
  }

  // ---- The latency-threshold control of a chart (usermeta.perfsiteThreshold, generator/site/charts.py) ----
  // A slider on a log scale over the data's range and a typed value; the chart's `latency_threshold` signal,
  // and the page's sentence, table cells and headings marked data-perfsite-threshold="<chart id>", follow.
  // The sweet spot is a selection over the chart's own points (highest throughput within the threshold, ties
  // to the lower latency, then the trial), as generator.analysis picks it; nothing is estimated here.
  // As the pages' `num` filter (generator/site/formatting.py): 3 significant digits, whole numbers from 100 up
  // with thousands separators, trailing zeros kept (1.90 ms).
  function num(value) {
    if (value === null || value === undefined || !isFinite(value)) return "\u2014";
    if (Math.abs(value) >= 100) return Math.round(value).toLocaleString("en-US");
    var rounded = Number(value.toPrecision(3));
    if (rounded === 0) return "0";
    var decimals = Math.max(0, 2 - Math.floor(Math.log10(Math.abs(rounded))));
    return rounded.toFixed(decimals);
  }
  var formatMs = num;

  // Whether point r beats point b: higher throughput, ties to the lower latency, then the trial (key or label).
  function better(r, b) {
    if (!b) return true;
    if (r.throughput_ips !== b.throughput_ips) return r.throughput_ips > b.throughput_ips;
    if (r.latency_ms !== b.latency_ms) return r.latency_ms < b.latency_ms;
    return (r.key || r.label || "") < (b.key || b.label || "");
  }

  function sweetSpots(rows, threshold) {
    var best = {};
    rows.forEach(function (r) {
      if (!(r.latency_ms <= threshold) || r.throughput_ips === null || r.throughput_ips === undefined) return;
      if (better(r, best[r.version])) best[r.version] = r;
    });
    return best;
  }

  function overallSpot(best) {
    return Object.keys(best).sort().reduce(function (spot, v) { return better(best[v], spot) ? best[v] : spot; }, null);
  }

  function followers(id, role) {
    return document.querySelectorAll('[data-perfsite-threshold="' + id + '"][data-role="' + role + '"]');
  }

  function updateFollowers(id, rows, threshold) {
    var best = sweetSpots(rows, threshold), spot = overallSpot(best);
    Array.prototype.forEach.call(followers(id, "value"), function (node) { node.textContent = formatMs(threshold); });
    Array.prototype.forEach.call(followers(id, "sentence"), function (node) {
      node.textContent = "";
      if (!spot) {
        node.appendChild(document.createTextNode("No configuration meets " + formatMs(threshold) + " ms: there is no sweet spot at this threshold."));
        return;
      }
      var strong = document.createElement("strong");
      strong.textContent = "Sweet spot";
      var version = document.createElement("strong");
      version.textContent = spot.version;
      node.appendChild(strong);
      node.appendChild(document.createTextNode(" under " + formatMs(threshold) + " ms: "));
      node.appendChild(version);
      node.appendChild(document.createTextNode(" at " + spot.label + ", " + num(spot.throughput_ips) + " items/s at " +
        num(spot.latency_ms) + " ms."));
    });
    Array.prototype.forEach.call(followers(id, "table"), function (box) {
      var columns = (box.dataset.columns || "").split(",");
      var table = box.querySelector("table");
      if (!table || !table.tBodies.length) return;
      Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
        var cells = row.cells, version = cells[columns.indexOf("version")].textContent.trim(), r = best[version];
        // A version with no successful trial keeps saying so, whatever the threshold.
        var config = cells[columns.indexOf("config")];
        if (config && config.textContent.indexOf("no successful trial") === 0) return;
        columns.forEach(function (name, i) {
          if (!cells[i] || name === "version" || !name) return;
          var text = !r ? (name === "config" ? "none under the threshold" : "\u2014")
            : name === "config" ? r.label + (box.dataset.noisySuffix && r.noise !== "none" ? " (uncertain)" : "")
            : name === "latency" ? num(r.latency_ms) : num(r.throughput_ips);
          cells[i].textContent = text;
        });
      });
    });
  }

  function thresholdControl(el, view, meta, rows) {
    var id = el.dataset.chart, lo = meta.min, hi = meta.max, steps = 1000;
    var box = document.createElement("div");
    box.className = "perfsite-threshold";
    var label = document.createElement("label");
    label.textContent = "Latency threshold (" + meta.percentile + ") ";
    var slider = document.createElement("input");
    slider.type = "range"; slider.min = 0; slider.max = steps; slider.step = 1;
    slider.setAttribute("aria-label", "Latency threshold, log scale from " + formatMs(lo) + " to " + formatMs(hi) + " ms");
    var typed = document.createElement("input");
    typed.type = "number"; typed.step = "any"; typed.min = 0;
    typed.setAttribute("aria-label", "Latency threshold in ms");
    label.appendChild(slider);
    box.appendChild(label);
    box.appendChild(typed);
    box.appendChild(document.createTextNode(" ms"));
    if (meta.spec) {
      var reset = document.createElement("button");
      reset.type = "button"; reset.className = "md-button perfsite-threshold-reset";
      reset.textContent = "Spec's " + formatMs(meta.spec) + " ms";
      reset.addEventListener("click", function () { set(meta.spec, null); });
      box.appendChild(reset);
    }
    el.parentNode.insertBefore(box, el);
    function position(ms) { return Math.round(steps * Math.log(Math.min(Math.max(ms, lo), hi) / lo) / Math.log(hi / lo)); }
    function set(ms, from) {
      if (!(ms > 0)) return;
      if (from !== slider) slider.value = position(ms);
      if (from !== typed) typed.value = Number(ms.toPrecision(3));
      view.signal("latency_threshold", ms).runAsync();
      el.__perfsiteThresholdValue = ms;
      updateFollowers(id, rows, ms);
    }
    slider.addEventListener("input", function () { set(lo * Math.pow(hi / lo, slider.value / steps), slider); });
    typed.addEventListener("input", function () { set(parseFloat(typed.value), typed); });
    el.__perfsiteThreshold = set;  // for tests: el.__perfsiteThreshold(0.5)
    set(meta.value, null);
  }

  // Numeric columns may hold "—" for a missing figure; Tablesort's number sorter then refuses the column.
  // This sorter accepts numbers (with thousands separators, %), ranges are left to the default string sort.
  var NUMBER = /^[-+]?(\d[\d,]*(\.\d+)?|\.\d+)(e[-+]?\d+)?%?$/i;
  var MISSING = "\u2014";

  function numeric(text) {
    var value = parseFloat(text.replace(/[,%]/g, ""));
    return isNaN(value) ? -Infinity : value;
  }

  function registerSorter() {
    if (typeof Tablesort === "undefined" || Tablesort.perfsiteRegistered) return;
    Tablesort.perfsiteRegistered = true;
    Tablesort.extend("perfsite-number", function (item) {
      return item === MISSING || NUMBER.test(item);
    }, function (a, b) {
      return numeric(b) - numeric(a);
    });
  }

  function sortableTables(root) {
    if (typeof Tablesort === "undefined") return;
    registerSorter();
    var tables = root.querySelectorAll("article table:not([class])");
    Array.prototype.forEach.call(tables, function (table) {
      if (table.dataset.perfsiteSortable) return;
      table.dataset.perfsiteSortable = "1";
      new Tablesort(table);
    });
  }

  // ---- Wide tables: the identifying columns stay in view, column groups can be hidden ----
  // The page generator puts <div class="perfsite-table-controls" data-sticky="N" data-groups="Name:3,4;…">
  // right before a wide table (columns counted from 1). Rules go into a <style> scoped to the table, so that
  // rows a long table pages in later (perfsite-tables.js) follow them too.
  var tableCount = 0;

  function tableAfter(marker) {
    var next = marker.nextElementSibling;
    while (next && next.tagName !== "TABLE" && !next.querySelector("table")) next = next.nextElementSibling;
    return next ? (next.tagName === "TABLE" ? next : next.querySelector("table")) : null;
  }

  function cells(id, column) {
    return 'table[data-perfsite-table="' + id + '"] tr > :nth-child(' + column + ")";
  }

  function tableControls(root) {
    Array.prototype.forEach.call(root.querySelectorAll(".perfsite-table-controls"), function (marker) {
      if (marker.dataset.perfsiteDone) return;
      marker.dataset.perfsiteDone = "1";
      var table = tableAfter(marker);
      if (!table) return;
      // A data attribute, not a class: the theme styles only tables without a class.
      var id = "t" + (++tableCount);
      table.dataset.perfsiteTable = id;
      var style = document.createElement("style");
      marker.appendChild(style);
      // The theme makes a table its own scroll box (overflow: auto), inside a scrolling wrapper that does
      // the scrolling: sticky cells stick to the nearest scroll box, so the table must not be one.
      var sticky = parseInt(marker.dataset.sticky || "0", 10);
      var rules = ['table[data-perfsite-table="' + id + '"] { overflow: visible !important; }'];
      // The sticky columns' left offsets are their widths, measured once drawn.
      var left = 0, head = table.tHead && table.tHead.rows[0];
      for (var c = 1; c <= sticky && head && head.cells[c - 1]; c++) {
        rules.push(cells(id, c) + " { position: sticky; left: " + left + "px; z-index: 1; " +
                   "background: var(--md-default-bg-color); }");
        left += head.cells[c - 1].getBoundingClientRect().width;
      }
      var hidden = {};
      function write() {
        var extra = Object.keys(hidden).filter(function (k) { return hidden[k]; }).map(function (k) {
          return hidden[k].map(function (col) { return cells(id, col) + " { display: none; }"; }).join("\n");
        });
        style.textContent = rules.concat(extra).join("\n");
      }
      var groups = (marker.dataset.groups || "").split(";").filter(Boolean);
      if (groups.length) {
        var bar = document.createElement("div");
        bar.className = "perfsite-column-groups";
        bar.appendChild(document.createTextNode("Columns: "));
        groups.forEach(function (g) {
          var parts = g.split(":"), name = parts[0];
          var columns = parts[1].split(",").map(function (x) { return parseInt(x, 10); });
          var label = document.createElement("label");
          var box = document.createElement("input");
          box.type = "checkbox"; box.checked = true; box.dataset.group = name;
          box.addEventListener("change", function () { hidden[name] = box.checked ? null : columns; write(); });
          label.appendChild(box);
          label.appendChild(document.createTextNode(" " + name));
          bar.appendChild(label);
        });
        marker.appendChild(bar);
      }
      write();
    });
  }

  function onPage() {
    watchScheme();
    tableControls(document);
    renderCharts(document);
    sortableTables(document);
  }

  if (typeof window.document$ !== "undefined" && window.document$.subscribe) {
    // mkdocs-material: emits for the first page and after each instant navigation.
    window.document$.subscribe(onPage);
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", onPage);
  } else {
    onPage();
  }
})();
