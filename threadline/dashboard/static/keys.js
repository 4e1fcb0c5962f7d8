// Settings > API keys. The Project field belongs to public keys and the Password field to secret ones:
// each is shown (and sent) only for its type. A new key's dialog leaves the page once closed, so its
// value does not linger in the document.
(function () {
  "use strict";

  function showForType(form) {
    var select = form.querySelector("[data-key-type]");
    if (!select) return;
    form.querySelectorAll("[data-for-type]").forEach(function (field) {
      var shown = field.getAttribute("data-for-type") === select.value;
      field.hidden = !shown;
      field.querySelectorAll("input, select").forEach(function (input) { input.disabled = !shown; });
    });
  }

  document.addEventListener("change", function (event) {
    if (event.target.matches && event.target.matches("[data-key-type]")) showForType(event.target.form);
  });

  function prepare(root) {
    root.querySelectorAll("form").forEach(function (form) {
      if (form.querySelector("[data-key-type]")) showForType(form);
    });
    root.querySelectorAll("dialog[data-forget-on-close]").forEach(function (dialog) {
      dialog.addEventListener("close", function () {
        dialog.remove();
        var name = document.getElementById("key-name");
        if (name) name.focus();
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () { prepare(document); });
  document.addEventListener("htmx:load", function (event) { prepare(event.target); });
})();
