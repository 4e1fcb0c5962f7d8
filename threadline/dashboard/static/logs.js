// The logs page's live tail. "Live" opens an EventSource on /logs/stream with the page's filters, starting
// where the page's list ended; each `record` event is one list item's HTML, put on top. "Pause" keeps the
// connection and holds what arrives (counted: "12 new"); resuming shows it all, in order. The browser
// resumes a dropped connection with Last-Event-ID; a stopped tail restarts from the last record shown.
(function () {
  "use strict";

  var live = document.getElementById("live");
  var pause = document.getElementById("pause");
  var list = document.getElementById("records");
  var status = document.getElementById("live-status");
  if (!live || !pause || !list || !status) return;

  var after = live.getAttribute("data-after");
  var source = null;
  var paused = false;
  var held = [];
  var seen = new Set();
  list.querySelectorAll("[data-record]").forEach(function (item) { seen.add(item.id); });

  function say(text) { status.textContent = text; }

  function show(html) {
    var template = document.createElement("template");
    template.innerHTML = html;
    var item = template.content.firstElementChild;
    if (!item || seen.has(item.id)) return;
    seen.add(item.id);
    item.classList.add("fresh");
    list.insertBefore(item, list.firstElementChild);
    var empty = document.getElementById("records-empty");
    if (empty) empty.remove();
  }

  function onRecord(event) {
    after = event.lastEventId || after;
    if (paused) {
      held.push(event.data);
      say("Paused: " + held.length + " new");
    } else {
      show(event.data);
    }
  }

  function start() {
    var url = live.getAttribute("data-stream");
    url += (url.indexOf("?") < 0 ? "?" : "&") + "after=" + encodeURIComponent(after);
    source = new EventSource(url);
    source.addEventListener("record", onRecord);
    source.addEventListener("open", function () { if (!paused) say("Live: new records appear at the top."); });
    source.addEventListener("message", function (event) {
      if (event.data === "[DONE]") stop("The time range has ended; nothing more can arrive.");
    });
    source.addEventListener("error", function () {
      if (source && source.readyState === EventSource.CLOSED) stop("The live tail stopped; press Live to try again.");
      else if (source) say("Connection lost; reconnecting…");
    });
    live.setAttribute("aria-pressed", "true");
    live.classList.add("on");
    pause.disabled = false;
  }

  function resume() {
    paused = false;
    pause.setAttribute("aria-pressed", "false");
    live.classList.remove("paused");
    held.splice(0).forEach(show);
    say(source ? "Live: new records appear at the top." : "");
  }

  function stop(message) {
    if (source) source.close();
    source = null;
    resume();
    live.setAttribute("aria-pressed", "false");
    live.classList.remove("on");
    pause.disabled = true;
    say(message || "Stopped.");
  }

  live.addEventListener("click", function () {
    if (source) stop(); else start();
  });
  pause.addEventListener("click", function () {
    if (paused) {
      resume();
      return;
    }
    paused = true;
    pause.setAttribute("aria-pressed", "true");
    live.classList.add("paused");
    say("Paused: 0 new");
  });
  if (live.hasAttribute("data-autostart")) start();
})();
