// Behaviour every page may use, kept out of the markup: the Content-Security-Policy runs no inline
// script and no event-handler attribute (onchange=, onclick=, ...).
"use strict";

// <select data-submit-on-change> submits its form when its value changes (the calibration report's
// agent-version picker); a <noscript> button next to it does the same without script.
document.addEventListener("change", (event) => {
  const field = event.target.closest("[data-submit-on-change]");
  if (field && field.form) field.form.requestSubmit();
});

// An htmx request the server refused, or that never reached it, says why next to the element that
// sent it (htmx swaps no error answer, so otherwise a click would seem to do nothing). The server
// words its refusals of htmx requests as one sentence of text/plain (config/errors.py). The labeling
// page's criterion forms say it on the criterion instead (labeling.js).
function htmxFailed(event, fallback) {
  const elt = event.detail.elt;
  if (!elt || !elt.closest || elt.closest("form.criterion")) return;
  const xhr = event.detail.xhr;
  const plain = xhr && (xhr.getResponseHeader("Content-Type") || "").startsWith("text/plain");
  let box = elt.previousElementSibling;
  if (!box || !box.classList.contains("htmx-error")) {
    box = document.createElement("p");
    box.className = "htmx-error bad";
    box.setAttribute("role", "alert");
    elt.before(box);
  }
  box.textContent = plain && xhr.responseText ? xhr.responseText : fallback(xhr);
}
document.addEventListener("htmx:responseError", (event) =>
  htmxFailed(event, (xhr) => `The server answered ${xhr ? xhr.status : "with an error"}; nothing was changed. Reload the page and try again.`)
);
document.addEventListener("htmx:sendError", (event) =>
  htmxFailed(event, () => "The server could not be reached; nothing was changed. Try again when you are back online.")
);
document.addEventListener("htmx:beforeRequest", (event) => {
  // A new try clears what the last failure said (before the swap, while the element is still in place).
  const elt = event.detail.elt;
  const box = elt && elt.previousElementSibling;
  if (box && box.classList.contains("htmx-error")) box.remove();
});

// <button data-copy="ID"> copies the text of the element with that id (a token shown once, a command) and
// says so in the .copy-status next to it. The clipboard API needs a secure context (https, localhost);
// elsewhere the text is selected and copied the older way, or left selected for the person to copy.
document.addEventListener("click", async (event) => {
  const button = event.target.closest("button[data-copy]");
  const source = button && document.getElementById(button.dataset.copy);
  if (!source) return;
  const text = source.textContent.trim();
  let copied = false;
  if (navigator.clipboard && window.isSecureContext) {
    try {
      await navigator.clipboard.writeText(text);
      copied = true;
    } catch (error) {
      copied = false;
    }
  }
  if (!copied) {
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    try {
      copied = document.execCommand("copy");
    } catch (error) {
      copied = false;
    }
  }
  const status = button.nextElementSibling;
  if (status && status.classList.contains("copy-status")) {
    status.textContent = copied ? "Copied." : "Selected: press Ctrl+C (⌘C) to copy it.";
  }
});
