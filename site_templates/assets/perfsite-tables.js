/* perfsite: page through long tables whose rows live in data files (generator/site/long_tables.py).
 *
 * A long table is followed by <div class="perfsite-long-table" data-table="ID" data-rows="N"
 * data-page-rows="P" data-chunk-rows="C"> and a paragraph linking its data files, in order. Each data file is
 * a script calling perfsiteLongTable(ID, k, rows) with rows k*C ... k*C+C-1, every row a list of HTML cells
 * (escaped when the site was built). Files are loaded with a <script> tag the first time one of their rows is
 * shown: fetch() is refused for file:// pages, script tags are not.
 */
(function () {
  "use strict";

  var chunks = {};   // "ID/k" -> rows, once loaded
  var waiting = {};  // "ID/k" -> callbacks while loading

  window.perfsiteLongTable = function (id, k, rows) {
    var key = id + "/" + k;
    chunks[key] = rows;
    var callbacks = waiting[key] || [];
    delete waiting[key];
    callbacks.forEach(function (done) { done(rows); });
  };

  function loadChunk(state, k, done) {
    var key = state.id + "/" + k;
    if (chunks[key]) { done(chunks[key]); return; }
    if (waiting[key]) { waiting[key].push(done); return; }
    waiting[key] = [done];
    var script = document.createElement("script");
    script.src = state.urls[k];
    script.onerror = function () {
      delete waiting[key];
      state.status.textContent = "These rows did not load: " + state.urls[k] + " is missing.";
    };
    document.head.appendChild(script);
  }

  function fillBody(state, rows) {
    var body = state.table.tBodies[0];
    var aligns = Array.prototype.map.call(state.table.tHead.rows[0].cells, function (th) {
      return th.style.textAlign;
    });
    var fresh = document.createElement("tbody");
    rows.forEach(function (cells) {
      var tr = fresh.insertRow();
      cells.forEach(function (html, i) {
        var td = tr.insertCell();
        td.innerHTML = html;  // escaped when the data file was written (long_tables.cell_html)
        if (aligns[i]) td.style.textAlign = aligns[i];
      });
    });
    body.parentNode.replaceChild(fresh, body);
  }

  function show(state, page) {
    var first = page * state.pageRows;
    var k = Math.floor(first / state.chunkRows);
    state.status.textContent = "Loading rows " + (first + 1).toLocaleString() + "\u2026";
    loadChunk(state, k, function (rows) {
      var start = first - k * state.chunkRows;
      fillBody(state, rows.slice(start, start + state.pageRows));
      state.page = page;
      var last = Math.min(first + state.pageRows, state.rows);
      state.status.textContent = "Rows " + (first + 1).toLocaleString() + "\u2013" + last.toLocaleString() +
        " of " + state.rows.toLocaleString();
      state.buttons.forEach(function (b) { b.el.disabled = b.target(state) === page; });
    });
  }

  function button(state, label, target) {
    var el = document.createElement("button");
    el.type = "button";
    el.className = "md-button perfsite-pager-button";
    el.textContent = label;
    el.addEventListener("click", function () { show(state, target(state)); });
    state.buttons.push({ el: el, target: target });
    return el;
  }

  function setUp(marker) {
    var previous = marker.previousElementSibling;
    var table = previous && (previous.tagName === "TABLE" ? previous : previous.querySelector("table"));
    var links = marker.nextElementSibling ? marker.nextElementSibling.querySelectorAll("a[href$='.js']") : [];
    if (!table || !table.tHead || !links.length) return;
    var state = {
      id: marker.dataset.table, table: table, rows: +marker.dataset.rows, pageRows: +marker.dataset.pageRows,
      chunkRows: +marker.dataset.chunkRows, page: 0, buttons: [],
      urls: Array.prototype.map.call(links, function (a) { return a.href; }),
    };
    var pages = Math.ceil(state.rows / state.pageRows);
    state.status = document.createElement("span");
    state.status.className = "perfsite-pager-status";
    marker.appendChild(button(state, "\u00ab First", function () { return 0; }));
    marker.appendChild(button(state, "\u2039 Previous", function (s) { return Math.max(0, s.page - 1); }));
    marker.appendChild(state.status);
    marker.appendChild(button(state, "Next \u203a", function (s) { return Math.min(pages - 1, s.page + 1); }));
    marker.appendChild(button(state, "Last \u00bb", function () { return pages - 1; }));
    state.status.textContent = "Rows 1\u2013" + Math.min(state.pageRows, state.rows).toLocaleString() + " of " +
      state.rows.toLocaleString();
    state.buttons.forEach(function (b) { b.el.disabled = b.target(state) === 0; });
  }

  function onPage() {
    var markers = document.querySelectorAll(".perfsite-long-table[data-table]");
    Array.prototype.forEach.call(markers, function (marker) {
      if (marker.dataset.perfsitePaged) return;
      marker.dataset.perfsitePaged = "1";
      setUp(marker);
    });
  }

  if (typeof window.document$ !== "undefined" && window.document$.subscribe) {
    window.document$.subscribe(onPage);  // mkdocs-material: first page and every instant navigation
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", onPage);
  } else {
    onPage();
  }
})();
