// Behaviour every page shares. No inline scripts anywhere (the Content-Security-Policy forbids them):
// pages declare behaviour with data- attributes, and this file (or a page's own file) acts on them.
(function () {
  "use strict";

  // <button data-copy="ID">: copies the text of the element with that id.
  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy]");
    if (!button) return;
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source) return;
    var text = source.value !== undefined ? source.value : source.textContent;
    navigator.clipboard.writeText(text.trim()).then(function () {
      var label = button.textContent;
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = label; }, 1500);
    });
  });

  // <form data-confirm="Question?">: asks before submitting (a plain form; htmx has hx-confirm).
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var question = form.getAttribute && form.getAttribute("data-confirm");
    if (question && !window.confirm(question)) event.preventDefault();
  }, true);

  // <dialog data-open-on-load>: shown modally as soon as it is on the page (native dialogs keep focus
  // inside and close with Escape). <button data-close-dialog> closes the dialog it is in.
  function openDialogs(root) {
    root.querySelectorAll("dialog[data-open-on-load]").forEach(function (dialog) {
      if (!dialog.open) dialog.showModal();
    });
  }
  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-close-dialog]");
    if (button) button.closest("dialog").close();
    var opener = event.target.closest("[data-open-dialog]");
    if (opener) {
      var dialog = document.getElementById(opener.getAttribute("data-open-dialog"));
      if (dialog && !dialog.open) dialog.showModal();
    }
  });
  document.addEventListener("DOMContentLoaded", function () { openDialogs(document); });
  document.addEventListener("htmx:load", function (event) { openDialogs(event.target); });
})();
