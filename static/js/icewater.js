// Behaviour every page may use, kept out of the markup: the Content-Security-Policy runs no inline
// script and no event-handler attribute (onchange=, onclick=, ...).
"use strict";

// <select data-submit-on-change> submits its form when its value changes (the calibration report's
// agent-version picker); a <noscript> button next to it does the same without script.
document.addEventListener("change", (event) => {
  const field = event.target.closest("[data-submit-on-change]");
  if (field && field.form) field.form.requestSubmit();
});
