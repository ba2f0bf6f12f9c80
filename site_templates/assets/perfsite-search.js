// The search index, loaded when the reader searches, not with every page: mkdocs-material fetches the index
// (search/search_index.json; search_index.js from disk) and builds its lunr index in a worker on every page
// load, about a quarter of a report page's CPU in the browser for a box most visits never open. Loaded in the
// head (material's `extra.polyfills`), after the iframe-worker shim, so that it wraps whichever Worker pages
// use; the theme's own code is untouched: its requests for the index and its search worker are held until the
// reader focuses the search box (a click, or the theme's keyboard shortcuts, which focus it) or opens a page
// with a search in its address (?q=, or ?h= from a search result, whose terms the theme highlights).
(() => {
  "use strict";
  const INDEX = /\/search\/search_index\.js(on)?(\?|#|$)/;
  const WORKER = /\/workers\/search\.[^/]*\.js(\?|#|$)/;
  let wanted;
  const searching = new Promise((resolve) => { wanted = resolve; });
  const address = new URLSearchParams(location.search);
  if (address.has("q") || address.has("h")) wanted();
  document.addEventListener("focusin", (event) => {
    if (event.target instanceof Element && event.target.matches("[data-md-component=search-query]")) wanted();
  });

  // The index: an XMLHttpRequest from a server, a script element from disk.
  const open = XMLHttpRequest.prototype.open;
  const send = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.open = function (method, url, ...rest) {
    this.perfsiteIndex = INDEX.test(String(url));
    return open.call(this, method, url, ...rest);
  };
  XMLHttpRequest.prototype.send = function (...args) {
    if (!this.perfsiteIndex) return send.apply(this, args);
    searching.then(() => send.apply(this, args));
  };
  const append = Node.prototype.appendChild;
  Node.prototype.appendChild = function (node) {
    if (node instanceof HTMLScriptElement && INDEX.test(node.src)) {
      searching.then(() => append.call(this, node));
      return node;
    }
    return append.call(this, node);
  };

  // The worker: started on the first search, with the messages the theme sent it meanwhile.
  const Real = window.Worker;
  class HeldWorker extends EventTarget {
    constructor(url, options) {
      super();
      this.onmessage = null;
      this.onerror = null;
      this.queue = [];
      // Resolved now: the theme's URL is relative to this page, and instant navigation changes the page's
      // address before the worker starts.
      const absolute = new URL(String(url), document.baseURI).href;
      searching.then(() => this.start(absolute, options));
    }
    start(url, options) {
      if (this.terminated) return;
      let worker;
      try {
        worker = new Real(url, options);
      } catch (error) {  // as a worker that failed to load: the theme's search says it is unavailable
        this.relay(new ErrorEvent("error", { message: String(error), error }));
        return;
      }
      worker.addEventListener("message", (event) => this.relay(new MessageEvent("message", { data: event.data })));
      worker.addEventListener("error", (event) => this.relay(new ErrorEvent("error", event)));
      for (const [message, transfer] of this.queue) worker.postMessage(message, transfer);
      this.queue = null;
      this.worker = worker;
    }
    relay(event) {
      this.dispatchEvent(event);
      const handler = event.type === "message" ? this.onmessage : this.onerror;
      if (handler) handler.call(this, event);
    }
    postMessage(message, transfer) {
      if (this.worker) this.worker.postMessage(message, transfer);
      else this.queue.push([message, transfer]);
    }
    terminate() {
      this.terminated = true;
      if (this.worker) this.worker.terminate();
      this.queue = [];
    }
  }
  window.Worker = function Worker(url, options) {
    return WORKER.test(String(url)) ? new HeldWorker(url, options) : new Real(url, options);
  };
  window.Worker.prototype = Real.prototype;
})();
