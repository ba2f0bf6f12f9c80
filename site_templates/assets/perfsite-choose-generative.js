/* perfsite: a generative experiment's "choose A and B" page (generator/site/generative_compare.py).
 *
 * Every figure and sentence is in the page's data element, computed and formatted when the site was built; this
 * script only shows the chosen pair's, with textContent. The choice lives in the address: #a=<version>&b=<version>
 * (the browser's Back button undoes a choice).
 */
(function () {
  "use strict";

  function setup(root) {
    var data = JSON.parse(root.querySelector(".perfsite-generative-choice-data").textContent);
    var selects = { a: root.querySelector('select[data-side="a"]'), b: root.querySelector('select[data-side="b"]') };
    ["a", "b"].forEach(function (side) {
      data.versions.forEach(function (v) {
        var option = document.createElement("option");
        option.value = v;
        option.textContent = v;
        selects[side].appendChild(option);
      });
      selects[side].addEventListener("change", function () { choose(selects.a.value, selects.b.value, true); });
    });
    root.querySelector('[data-action="swap"]').addEventListener("click", function () {
      choose(selects.b.value, selects.a.value, true);
    });

    function fromAddress() {
      var params = new URLSearchParams(location.hash.slice(1));
      var a = params.get("a"), b = params.get("b");
      var known = function (v) { return data.versions.indexOf(v) >= 0; };
      return known(a) && known(b) && a !== b ? [a, b] : data["default"];
    }

    function choose(a, b, remember) {
      if (a === b) {  // one version against itself: take the next one as B
        b = data.versions[(data.versions.indexOf(a) + 1) % data.versions.length];
      }
      selects.a.value = a;
      selects.b.value = b;
      if (remember) {
        var hash = "#a=" + encodeURIComponent(a) + "&b=" + encodeURIComponent(b);
        if (location.hash !== hash) history.pushState(null, "", hash);
      }
      show(data.pairs[a + "\n" + b]);
    }

    function show(pair) {
      var list = root.querySelector('[data-section="summaries"]');
      list.textContent = "";
      pair.summaries.forEach(function (sentence) {
        var item = document.createElement("li");
        item.textContent = sentence;
        list.appendChild(item);
      });
      var body = root.querySelector('[data-section="verdicts"] tbody');
      body.textContent = "";
      pair.rows.forEach(function (r) {
        var tr = document.createElement("tr");
        [r.config, r.phase, r.a, r.b, r.ratio, r.interval].forEach(function (text, i) {
          var td = document.createElement("td");
          td.textContent = text;
          if (i >= 2 && i <= 4) td.style.textAlign = "right";
          tr.appendChild(td);
        });
        var verdict = document.createElement("td");
        var strong = document.createElement("strong");
        strong.textContent = r.verdict;
        verdict.appendChild(strong);
        verdict.appendChild(document.createTextNode(": " + r.reason));
        tr.appendChild(verdict);
        body.appendChild(tr);
      });
      root.setAttribute("data-ready", selects.a.value + "\n" + selects.b.value);
    }

    window.addEventListener("popstate", function () { var p = fromAddress(); choose(p[0], p[1], false); });
    var start = fromAddress();
    choose(start[0], start[1], false);
  }

  function init() {
    document.querySelectorAll(".perfsite-generative-choice").forEach(function (root) {
      if (!root.hasAttribute("data-ready")) setup(root);
    });
  }
  // mkdocs-material's instant navigation swaps pages in without a load event: follow its document$ too.
  if (window.document$ && window.document$.subscribe) window.document$.subscribe(init);
  else if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
