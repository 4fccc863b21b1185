/* Icewater labeling page: keyboard flow, quoting a selection, and saves that never lose typing.
 *
 * The server does all checking (the quote must be in the transcript, the outcome in the vocabulary);
 * this file only moves focus, fills fields and asks htmx to save. Without it the page still works:
 * every criterion has a Save button and Submit is a plain form post.
 */
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  if (window.htmx) {
    // htmx 2 swaps no 4xx answer by default. A refused save answers 409/422 with the criterion's
    // partial (what was typed plus the reason), which must replace the form so the message shows.
    htmx.config.responseHandling = [
      { code: "204", swap: false },
      { code: "[23]..", swap: true },
      { code: "^(409|422)$", swap: true, error: false },
      { code: "[45]..", swap: false, error: true },
      { code: "...", swap: false },
    ];
  }

  // Adjudication: bring the first quoted passage into view inside the transcript; keys for the gold form.
  const adjudication = document.querySelector("[data-adjudication-page]");
  if (adjudication) {
    const mark = document.querySelector("#transcript mark");
    const box = document.getElementById("transcript");
    if (mark && box) box.scrollTop += mark.getBoundingClientRect().top - box.getBoundingClientRect().top - 80;
    const gold = document.querySelector("form.gold-form");
    const rationale = document.getElementById("rationale");
    document.addEventListener("keydown", (e) => {
      if (!gold) return;
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        gold.requestSubmit();
        return;
      }
      const t = e.target;
      if (e.altKey || e.ctrlKey || e.metaKey || (t.matches && t.matches("textarea, input[type=text], select"))) return;
      const values = { p: "PASS", f: "FAIL", n: "NOT_APPLICABLE", c: "ABSTAIN" };
      if (values[e.key]) {
        const radio = document.getElementById("gold-" + values[e.key]);
        if (radio) { e.preventDefault(); radio.checked = true; radio.focus(); }
      } else if (e.key === "r" && rationale) {
        e.preventDefault();
        rationale.focus();
      }
    });
  }

  const page = document.querySelector("[data-labeling-page]");
  if (!page) return;
  const locked = page.hasAttribute("data-locked");
  const correcting = page.hasAttribute("data-correcting");
  let currentKey = null;

  const forms = () => Array.from(document.querySelectorAll("form.criterion"));
  let leftWithEnter = null; // the criterion Enter saved and left, until its answer comes back
  const formFor = (key) => document.getElementById("criterion-" + key);
  const evidenceOf = (form) => form.querySelector("textarea[name=evidence]");
  const checkedOf = (form) => {
    const r = form.querySelector("input[name=outcome]:checked");
    return r ? r.value : "";
  };
  const isDirty = (form) => {
    const ev = evidenceOf(form);
    return checkedOf(form) !== (form.dataset.savedOutcome || "") || (ev && ev.value.trim() !== (ev.dataset.saved || ""));
  };
  // One save at a time per criterion: a save asked for while one is in flight runs after its swap
  // (htmx would drop a queued request, since the swap replaces the form it belongs to), and one asked
  // for between a swap and its settling runs when it settles: htmx wires the new form's triggers
  // then, and until then the new form still wears the old one's classes, htmx-request included
  // (so it must be asked first: read as "in flight", the save would wait for a swap that never comes).
  const save = (form) => {
    if (form._settling) form._resaveOnSettle = true;
    else if (form.classList.contains("htmx-request")) form._resave = true;
    else htmx.trigger(form, "submit"); // both modes listen for it (corrections save on submit only)
  };

  // The current criterion's quote, marked where it is in the transcript (whitespace-insensitive,
  // like the server's check), so the annotator sees what their evidence points at.
  const quotables = Array.from(document.querySelectorAll("#transcript .quotable"));
  quotables.forEach((el) => { el._text = el.textContent; });
  function showQuote(form) {
    quotables.forEach((el) => { if (el._marked) { el.textContent = el._text; el._marked = false; } });
    const ev = form && evidenceOf(form);
    const quote = ev ? ev.value.trim() : "";
    if (!quote || quote.toUpperCase() === "NONE") return;
    const words = quote.split(/\s+/).map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
    const pattern = new RegExp(words.join("\\s+"));
    for (const el of quotables) {
      const m = pattern.exec(el._text);
      if (!m) continue;
      const mark = document.createElement("mark");
      mark.className = "mine";
      mark.textContent = m[0];
      el.replaceChildren(el._text.slice(0, m.index), mark, el._text.slice(m.index + m[0].length));
      el._marked = true;
      const box = document.getElementById("transcript");
      const top = mark.getBoundingClientRect().top - box.getBoundingClientRect().top;
      if (top < 0 || top > box.clientHeight - 40) box.scrollTop += top - 80;
      return;
    }
  }

  function setCurrent(key, { focus = true, scroll = true } = {}) {
    const form = formFor(key);
    if (!form) return;
    if (key !== currentKey) showQuote(form);
    currentKey = key;
    forms().forEach((f) => f.classList.toggle("current", f === form));
    if (scroll) form.scrollIntoView({ block: "nearest", behavior: "smooth" });
    if (focus) {
      const radio = form.querySelector("input[name=outcome]:checked") || form.querySelector("input[name=outcome]");
      if (radio && !radio.disabled) radio.focus({ preventScroll: true });
    }
  }

  function move(step) {
    const all = forms();
    const i = all.findIndex((f) => f.dataset.key === currentKey);
    const next = all[Math.min(all.length - 1, Math.max(0, i + step))];
    if (next) setCurrent(next.dataset.key);
  }

  function pick(value) {
    const form = formFor(currentKey);
    if (!form) return;
    const radio = form.querySelector(`input[name=outcome][value="${value}"]`);
    if (!radio || radio.disabled) return;
    radio.checked = true;
    radio.dispatchEvent(new Event("change", { bubbles: true }));
    if (value === "PASS" || value === "FAIL") focusEvidence(form, { select: true });
    else if (correcting) radio.focus(); // a correction is saved deliberately: Enter or Save correction
    else move(1);
  }

  // select: an existing quote is selected, so what is typed next replaces it (p / f on a criterion that
  // already has one); otherwise the cursor goes to its end, to go on writing (e).
  function focusEvidence(form, { select = false } = {}) {
    const ev = evidenceOf(form);
    if (!ev || ev.disabled) return;
    ev.focus({ preventScroll: true });
    // Scrolled by hand: "nearest" honours the box's scroll-margin-bottom (labeling.css), which keeps it
    // clear of the sticky Submit bar; focus's own scrolling stops as soon as the box is under the bar.
    ev.scrollIntoView({ block: "nearest" });
    ev.setSelectionRange(select ? 0 : ev.value.length, ev.value.length);
  }

  function selectedQuote() {
    const sel = window.getSelection();
    if (!sel || sel.isCollapsed) return null;
    const text = sel.toString().trim();
    if (!text) return null;
    const transcript = document.getElementById("transcript");
    const node = sel.anchorNode && (sel.anchorNode.nodeType === 1 ? sel.anchorNode : sel.anchorNode.parentElement);
    if (!transcript || !node || !transcript.contains(node)) return null;
    if (node.closest("[data-part=reference]")) return { text, reference: true };
    return { text, reference: false };
  }

  function quoteInto(form, quote) {
    const ev = evidenceOf(form);
    if (!ev || ev.disabled) return;
    ev.value = quote;
    ev.classList.remove("flash");
    void ev.offsetWidth; // restart the highlight animation
    ev.classList.add("flash");
    if (!correcting) save(form); // a correction is saved with Enter or Save correction
  }

  function quoteSelection() {
    const form = formFor(currentKey);
    const q = selectedQuote();
    if (!form || !q) return;
    if (q.reference) {
      status(form, "The reference is not part of the transcript: quote the input, a tool call or the response.");
      return;
    }
    quoteInto(form, q.text);
  }

  function status(form, message) {
    const p = form.querySelector(".crit-status");
    if (!p) return;
    const span = document.createElement("span");
    span.className = "warn";
    span.textContent = message;
    p.replaceChildren(span);
  }

  // --- Saving without losing what is typed while a save is in flight -------------------------
  // htmx marks a form with htmx-request while its save is in flight; a swapped-out form is gone.
  const inFlight = () => document.querySelectorAll("form.criterion.htmx-request").length;
  document.body.addEventListener("htmx:beforeRequest", (e) => {
    const form = e.detail.elt;
    if (!form.matches || !form.matches("form.criterion")) return;
    const ev = evidenceOf(form);
    form._sent = { outcome: checkedOf(form), evidence: ev ? ev.value : "" };
  });
  document.body.addEventListener("htmx:beforeSwap", (e) => {
    const form = e.detail.target;
    if (!form.matches || !form.matches("form.criterion")) return;
    const ev = evidenceOf(form);
    const active = document.activeElement;
    form._keep = {
      key: form.dataset.key,
      sent: form._sent || { outcome: "", evidence: "" },
      outcome: checkedOf(form),
      evidence: ev ? ev.value : "",
      focusId: active && form.contains(active) ? active.id : null,
      caret: active === ev ? [ev.selectionStart, ev.selectionEnd] : null,
      height: ev ? ev.style.height : "", // a box the person resized keeps its size (set as script, not markup)
      resave: Boolean(form._resave),
    };
    window.__pendingKeep = form._keep;
  });
  document.body.addEventListener("htmx:afterSwap", () => {
    const keep = window.__pendingKeep;
    window.__pendingKeep = null;
    if (!keep) return;
    const form = formFor(keep.key);
    if (!form) return;
    if (keep.key === currentKey) form.classList.add("current");
    const ev = evidenceOf(form);
    // Typed or picked after the save left: put it back, and save it unless the person is still typing.
    if (ev && keep.evidence !== keep.sent.evidence) ev.value = keep.evidence;
    if (ev && keep.height) ev.style.height = keep.height;
    if (keep.outcome !== keep.sent.outcome) {
      const r = form.querySelector(`input[name=outcome][value="${keep.outcome}"]`);
      if (r) r.checked = true;
    }
    if (keep.focusId) {
      const el = document.getElementById(keep.focusId);
      if (el) {
        el.focus({ preventScroll: true });
        if (keep.caret && el === ev) ev.setSelectionRange(keep.caret[0], keep.caret[1]);
      }
    }
    const typing = ev && document.activeElement === ev;
    const changed = keep.outcome !== keep.sent.outcome || (keep.evidence !== keep.sent.evidence && !typing);
    const resave = keep.resave || changed;
    // The answer to the save Enter asked for (not an earlier one still in flight, after which it is sent):
    // whether it was refused is known once it settles (until then the form wears the old one's classes).
    if (keep.key === leftWithEnter && !resave) {
      leftWithEnter = null;
      form._backIfRefused = true;
    }
    updateCount();
    if (keep.key === currentKey) showQuote(form);
    // htmx wires the new form's triggers when it settles, so a save asked for now would be lost:
    // it waits for the settling (save() knows by _settling).
    form._resaveOnSettle = resave;
    form._settling = true;
  });
  document.body.addEventListener("htmx:afterSettle", (e) => {
    const form = e.detail.elt;
    // Settling puts the server's class attribute back, so "current" is applied again here.
    if (form && form.matches && form.matches("form.criterion")) {
      form.classList.toggle("current", form.dataset.key === currentKey);
    }
    if (form) form._settling = false;
    if (form && form._backIfRefused) {
      form._backIfRefused = false;
      // Refused after Enter had moved on: back to it (unless the person is already typing a quote elsewhere),
      // so the reason is not left behind, off-screen.
      const active = document.activeElement;
      const elsewhere = active && active.matches("textarea") && !form.contains(active);
      if (form.classList.contains("has-error") && !elsewhere) {
        setCurrent(form.dataset.key, { focus: false });
        focusEvidence(form);
      }
    }
    if (form && form._resaveOnSettle) {
      form._resaveOnSettle = false;
      save(form);
    }
  });

  // A save that could not be stored and has no partial to show (lost reservation, server error,
  // no network): say so on the criterion; what was typed stays on the page.
  function saveFailed(e, fallback) {
    const form = e.detail.elt;
    if (!form || !form.matches || !form.matches("form.criterion")) return;
    const xhr = e.detail.xhr;
    const plain = xhr && (xhr.getResponseHeader("Content-Type") || "").startsWith("text/plain");
    const message = plain && xhr.responseText ? xhr.responseText : fallback(xhr);
    const p = form.querySelector(".crit-status");
    if (!p) return;
    const span = document.createElement("span");
    span.className = "bad";
    span.textContent = message;
    p.replaceChildren(span);
    p.setAttribute("role", "alert");
    form.classList.add("has-error");
  }
  document.body.addEventListener("htmx:responseError", (e) =>
    saveFailed(e, (xhr) => `Not saved: the server answered ${xhr ? xhr.status : "an error"}. Your answer is still here; try again.`)
  );
  document.body.addEventListener("htmx:sendError", (e) =>
    saveFailed(e, () => "Not saved: the server could not be reached. Your answer is still here; it saves when you change it again.")
  );

  function updateCount() {
    const all = forms();
    const done = all.filter((f) => f.dataset.savedOutcome).length;
    const el = document.getElementById("answered-count");
    if (el) el.textContent = done;
    const bar = document.getElementById("answered-bar");
    if (bar && all.length) bar.style.width = Math.round((100 * done) / all.length) + "%";
  }

  // --- Submit: first flush what is not saved yet, then post -----------------------------------
  const submitForm = document.getElementById("submit-form");
  let submitting = false;
  async function submitWhenSaved() {
    if (!submitForm || submitting) return;
    submitting = true;
    const deadline = Date.now() + 8000;
    while (Date.now() < deadline) {
      const dirty = forms().filter((f) => isDirty(f) && !f.classList.contains("has-error"));
      if (inFlight() === 0 && dirty.length === 0) break;
      if (inFlight() === 0) dirty.forEach(save);
      await new Promise((r) => setTimeout(r, 60));
    }
    // Whatever is left (a refused quote, an unanswered criterion, a PASS/FAIL without a quote) is listed in the
    // sticky bar and nothing is posted: the one way a refused Submit is shown (the server's refusal, for a page
    // without script, renders the same list there).
    const left = problemForms();
    if (left.length) {
      submitting = false;
      showProblems();
      // The cursor goes to a refused criterion first (the current one if it is), else the first one left.
      const refused = left.filter((f) => f.classList.contains("has-error"));
      const pool = refused.length ? refused : left;
      const stay = pool.find((f) => f.dataset.key === currentKey) || pool[0];
      setCurrent(stay.dataset.key);
      if (stay.dataset.savedOutcome || stay.classList.contains("has-error")) focusEvidence(stay);
      return;
    }
    submitForm.submit();
  }

  // Everything that still stands between this page and a submit, one line per criterion: the server
  // says the same when it refuses (labeling/annotate.py submit), but it cannot know of a refused quote.
  const problemForms = () => forms().filter((f) => problemOf(f));
  const problems = () => forms().map(problemOf).filter(Boolean);
  function problemOf(f) {
    const key = f.dataset.key;
    const saved = f.dataset.savedOutcome || "";
    const ev = evidenceOf(f);
    if (f.classList.contains("has-error")) {
      // The reason's first sentence: the whole of it is on the criterion.
      const said = ((f.querySelector(".crit-status") || {}).textContent || "").trim().split(/(?<=\.)\s/)[0];
      return `${key}: ${said || "not saved"}`;
    }
    if (!saved) return `${key}: not answered yet`;
    if ((saved === "PASS" || saved === "FAIL") && ev && !(ev.dataset.saved || "").trim()) {
      return `${key}: needs an evidence quote from the transcript, or NONE`;
    }
    return "";
  }

  // Said in the sticky Submit bar, so it is on the screen wherever the page is scrolled.
  function showProblems() {
    let box = document.getElementById("submit-problems");
    if (!box) {
      box = document.createElement("div");
      box.id = "submit-problems";
      box.className = "error";
      box.setAttribute("role", "alert");
      submitForm.prepend(box);
    }
    const list = document.createElement("ul");
    problems().forEach((line) => {
      const li = document.createElement("li");
      li.textContent = line;
      list.appendChild(li);
    });
    const lead = document.createElement("strong");
    lead.textContent = "Not submitted. Still to fix:";
    box.replaceChildren(lead, list);
  }
  // The bar grows with that list: scroll margins (labeling.css) follow its height.
  if (submitForm && window.ResizeObserver) {
    new ResizeObserver(() => {
      document.documentElement.style.setProperty("--submit-bar-height", submitForm.offsetHeight + "px");
    }).observe(submitForm);
  }
  if (submitForm) {
    submitForm.addEventListener("submit", (e) => {
      e.preventDefault();
      submitWhenSaved();
    });
  }

  // --- Keyboard --------------------------------------------------------------------------------
  document.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      submitWhenSaved();
      return;
    }
    const t = e.target;
    if (t && t.matches && t.matches("textarea[name=evidence]")) {
      const form = t.closest("form.criterion");
      if (e.key === "Enter" && !e.shiftKey) {
        e.preventDefault();
        if (isDirty(form)) {
          save(form);
          leftWithEnter = form.dataset.key; // if the server refuses this quote, the cursor comes back to it
        } else if (form.classList.contains("has-error")) {
          return; // the refused quote is still there, unchanged: stay on it and its reason
        }
        move(1);
      } else if (e.key === "Escape") {
        e.preventDefault();
        if (isDirty(form)) save(form);
        setCurrent(form.dataset.key, { scroll: false });
      }
      return;
    }
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    if (t && t.matches && t.matches("input[type=text], input[type=search], select, textarea")) return;
    if (e.key === "?") {
      const help = document.getElementById("keys");
      if (help && help.togglePopover) { e.preventDefault(); help.togglePopover(); }
      return;
    }
    if (locked) return;
    const keys = { p: "PASS", f: "FAIL", n: "NOT_APPLICABLE", c: "ABSTAIN" };
    if (keys[e.key]) { e.preventDefault(); pick(keys[e.key]); }
    else if (e.key === "j") { e.preventDefault(); move(1); }
    else if (e.key === "k") { e.preventDefault(); move(-1); }
    else if (e.key === "e") { e.preventDefault(); focusEvidence(formFor(currentKey)); }
    else if (e.key === "q") { e.preventDefault(); quoteSelection(); }
    else if (/^[1-9]$/.test(e.key)) {
      const f = forms()[Number(e.key) - 1];
      if (f) { e.preventDefault(); setCurrent(f.dataset.key); }
    }
  });

  // Clicking or tabbing into a criterion makes it the current one.
  document.addEventListener("focusin", (e) => {
    const form = e.target.closest && e.target.closest("form.criterion");
    if (form && form.dataset.key !== currentKey) setCurrent(form.dataset.key, { focus: false, scroll: false });
  });
  // Leaving an evidence box with unsaved text saves it (covers text restored after a swap).
  document.addEventListener("focusout", (e) => {
    const t = e.target;
    if (!t.matches || !t.matches("textarea[name=evidence]")) return;
    const form = t.closest("form.criterion");
    if (form && !correcting && isDirty(form) && !form.classList.contains("htmx-request")) save(form);
  });

  // Selecting text in the transcript quotes it for the current criterion.
  const transcript = document.getElementById("transcript");
  if (transcript && !locked) {
    transcript.addEventListener("mouseup", () => {
      setTimeout(() => {
        if (selectedQuote()) quoteSelection();
      }, 0);
    });
  }
  document.addEventListener("click", (e) => {
    const button = e.target.closest && e.target.closest("button[data-action]");
    if (!button) return;
    const form = button.closest("form.criterion");
    setCurrent(form.dataset.key, { focus: false, scroll: false });
    if (button.dataset.action === "none") quoteInto(form, "NONE");
    if (button.dataset.action === "quote") quoteSelection();
  });

  // Typed but not saved yet (or a correction not saved): ask before leaving the page.
  window.addEventListener("beforeunload", (e) => {
    if (submitting || locked) return;
    if (forms().some((f) => isDirty(f))) {
      e.preventDefault();
      e.returnValue = "";
    }
  });

  // Start on the first criterion without an answer.
  // A refused Submit comes back with its criteria marked: start on the first of them.
  const first =
    forms().find((f) => f.classList.contains("has-error")) || forms().find((f) => !f.dataset.savedOutcome) || forms()[0];
  const refusedOnLoad = Boolean(document.getElementById("submit-problems"));
  if (first) setCurrent(first.dataset.key, { focus: !locked, scroll: refusedOnLoad });
})();
