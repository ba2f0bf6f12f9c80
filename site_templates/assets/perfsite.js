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
  };

  // The spec is the <script type="application/json" id="ID"> right after the chart's div, wrapped in a
  // one-element array. Material's instant navigation re-inserts inline scripts without their attributes
  // (id included), so fall back to the next sibling script.
  function specElement(el) {
    var byId = document.getElementById(el.dataset.chart);
    if (byId && byId.tagName === "SCRIPT") return byId;
    var next = el.nextElementSibling;
    return next && next.tagName === "SCRIPT" ? next : null;
  }

  function renderCharts(root) {
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
      vegaEmbed(el, spec, EMBED_OPTIONS).then(function (result) {
        // The Vega view, for tests and readers' consoles: el.__perfsiteView.signal("latency_threshold").
        el.__perfsiteView = result.view;
      }).catch(function (error) {
        el.textContent = "Chart failed to render: " + error.message;
      });
    });
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
    p.appendChild(document.createTextNode("Download data: "));
    p.appendChild(downloadLink("CSV", toCsv(rows), "text/csv", base + ".csv"));
    p.appendChild(document.createTextNode(" \u00b7 "));
    p.appendChild(downloadLink("JSON", JSON.stringify(rows, null, 1) + "\n", "application/json", base + ".json"));
    source.parentNode.insertBefore(p, source.nextSibling);
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

  function onPage() {
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
