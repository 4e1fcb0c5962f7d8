// The run view's live stream (htmx SSE extension, see templates/runs/_view.html).
//
// The browser's own reconnection resumes with Last-Event-ID. But when the stream fails outright (a 5xx
// while the server restarts), the extension opens a new EventSource on the element's sse-connect URL,
// which carries no Last-Event-ID: so the URL is kept at the last event shown (?after=), and the server
// resumes after the later of the two. Nothing here touches the log itself: each message costs the
// browser only its own fragment, however long the run.
(function () {
  "use strict";
  document.addEventListener("htmx:sseMessage", function (event) {
    var log = event.target.closest && event.target.closest("[data-run-log]");
    var id = event.detail && event.detail.lastEventId;
    if (!log || !id) return;
    log.setAttribute("sse-connect", log.getAttribute("data-stream") + "?after=" + encodeURIComponent(id));
  });
  // The stream's end (sse-close="done"): the view is a replay from now on, and a list of runs on the same
  // page (the thread page's sidebar) shows the status the view ended with.
  document.addEventListener("htmx:sseClose", function (event) {
    var log = event.target.closest && event.target.closest("[data-run-log]");
    if (!log) return;
    log.setAttribute("data-ended", "");
    var status = document.getElementById("run-status");
    if (!status) return;
    document.querySelectorAll("[data-run-badge]").forEach(function (badge) {
      if (badge.getAttribute("data-run-badge") !== log.getAttribute("data-run-log")) return;
      // From the text: htmx applies a swapped element's new class only after its settle delay.
      var text = status.textContent.trim();
      badge.className = "badge " + text;
      badge.textContent = text;
    });
  });
})();
