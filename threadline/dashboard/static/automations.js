// The automation form: only the fields of the chosen trigger type are shown. Without this script both
// groups stay visible, and the server reads only the chosen type's fields.
(function () {
  "use strict";

  function showChosen(form) {
    var chosen = form.querySelector("input[name=trigger_type]:checked");
    form.querySelectorAll("[data-trigger]").forEach(function (group) {
      group.hidden = chosen !== null && group.getAttribute("data-trigger") !== chosen.value;
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("form.automation-form").forEach(function (form) {
      showChosen(form);
      form.addEventListener("change", function (event) {
        if (event.target.name === "trigger_type") showChosen(form);
      });
    });
  });
})();
