// The Airlock web console (docs/console.md). Everything shown is built with DOM APIs and
// textContent: no value from a tool or a user is ever parsed as HTML. Bidi overrides and
// every other invisible or format character are shown as escapes (⟨U+202E⟩) so they cannot
// hide or reorder what an approver reads. JSON is shown from the server's text, token by
// token, never re-serialised from a JavaScript value (which would round big integers). The credential never reaches this script: the session is an HttpOnly
// cookie; the CSRF token lives in this closure only.
"use strict";
(() => {
  const POLL_MS = 2000;
  const ARGS_SHOWN = 64 * 1024;  // characters of the arguments shown before "show all"
  const state = { csrf: "", who: null, timer: 0, route: "", seen: "", terminal: null };

  // ---- rendering helpers -------------------------------------------------------------

  // Every character an approver could not see or could misread as a plain space: format
  // characters (Cf: zero-width, bidi controls, tags U+E0000-E007F, ...), control characters
  // (Cc) other than a newline or tab in free text, line and paragraph separators (Zl, Zp),
  // spaces other than U+0020 (Zs), every default-ignorable code point (variation selectors
  // U+FE00-FE0F and U+E0100-E01EF, Hangul fillers, the combining grapheme joiner, ...), and
  // the blank braille pattern U+2800.
  const INVISIBLE =
    /(?![\n\t])(?:[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}\u2800\uFE00-\uFE0F\u{E0000}-\u{E01EF}]|(?! )\p{Zs})/gu;

  // "⟨U+200B⟩": how an invisible character is shown.
  function codePointLabel(ch) {
    return "\u27E8U+" + ch.codePointAt(0).toString(16).toUpperCase().padStart(4, "0") + "\u27E9";
  }

  function countInvisible(s) {
    return (s.match(INVISIBLE) || []).length;
  }

  // A fragment showing `value` as text, its invisible characters as visible escapes.
  function text(value) {
    const s = typeof value === "string" ? value : value === null || value === undefined ? "" : String(value);
    const frag = document.createDocumentFragment();
    let last = 0;
    for (const m of s.matchAll(INVISIBLE)) {
      if (m.index > last) frag.appendChild(document.createTextNode(s.slice(last, m.index)));
      const mark = document.createElement("span");
      mark.className = "escaped";
      mark.title = "an invisible, format or direction-changing character, shown escaped";
      mark.textContent = codePointLabel(m[0]);
      frag.appendChild(mark);
      last = m.index + m[0].length;
    }
    if (last < s.length) frag.appendChild(document.createTextNode(s.slice(last)));
    return frag;
  }

  // ---- JSON as text ----------------------------------------------------------------------
  // JSON is shown from the text the server sent, token by token, never from a value
  // JSON.parse made (a JavaScript number rounds 12345678901234567891 to 12345678901234567000).

  // The tokens of JSON text with their exact text and offsets. Tolerant of a text cut short
  // (an unterminated string is one token to the end): only display depends on it.
  const TOKEN = /([ \t\n\r]+)|("(?:[^"\\]|\\[\s\S])*"?)|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|(true|false|null)|([{}\[\]:,])|([\s\S])/gy;
  const TOKEN_KINDS = ["space", "string", "number", "literal", "punct", "other"];

  function jsonTokens(src) {
    const tokens = [];
    TOKEN.lastIndex = 0;
    for (let m; (m = TOKEN.exec(src)) !== null;) {
      const kind = TOKEN_KINDS[m.slice(1).findIndex((g) => g !== undefined)];
      tokens.push({ kind, text: m[0], start: m.index, end: TOKEN.lastIndex });
    }
    return tokens;
  }

  // A fragment of `src` laid out with two-space indentation; every token's text unchanged.
  function jsonText(src) {
    const frag = document.createDocumentFragment();
    const tokens = jsonTokens(src).filter((t) => t.kind !== "space");
    let depth = 0;
    const newline = () => frag.appendChild(document.createTextNode("\n" + "  ".repeat(Math.max(depth, 0))));
    tokens.forEach((t, i) => {
      const next = tokens[i + 1], prev = tokens[i - 1];
      if (t.text === "{" || t.text === "[") {
        frag.appendChild(document.createTextNode(t.text));
        depth++;
        if (next && next.text !== "}" && next.text !== "]") newline();
      } else if (t.text === "}" || t.text === "]") {
        depth--;
        if (prev && prev.text !== "{" && prev.text !== "[") newline();
        frag.appendChild(document.createTextNode(t.text));
      } else if (t.text === ",") {
        frag.appendChild(document.createTextNode(","));
        newline();
      } else if (t.text === ":") {
        frag.appendChild(document.createTextNode(": "));
      } else {
        frag.appendChild(el("span", { class: "json-" + t.kind }, t.text));
      }
    });
    return frag;
  }

  // The exact text of member `key` of the JSON object `src` (a whole server answer), or null.
  function rawMember(src, key) {
    const tokens = jsonTokens(src).filter((t) => t.kind !== "space");
    let depth = 0;
    for (let i = 0; i < tokens.length; i++) {
      const t = tokens[i];
      if (depth === 1 && t.kind === "string" && tokens[i + 1] && tokens[i + 1].text === ":" && JSON.parse(t.text) === key)
        return valueText(src, tokens, i + 2);
      if (t.text === "{" || t.text === "[") depth++;
      else if (t.text === "}" || t.text === "]") depth--;
    }
    return null;
  }

  // The text of the value that starts at tokens[i].
  function valueText(src, tokens, i) {
    let depth = 0;
    for (let j = i; j < tokens.length; j++) {
      if (tokens[j].text === "{" || tokens[j].text === "[") depth++;
      else if (tokens[j].text === "}" || tokens[j].text === "]") depth--;
      if (depth === 0) return src.slice(tokens[i].start, tokens[j].end);
    }
    return null;
  }

  // el("td", {class: "x"}, "text", node, ...): attributes from this file only, never data.
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v;
      else if (k === "onclick") node.addEventListener("click", v);
      else node.setAttribute(k, v);
    }
    for (const c of children) node.appendChild(c instanceof Node ? c : text(c));
    return node;
  }

  // A link inside the console: only "#/<view>/<encoded id>".
  function link(view, id, label) {
    return el("a", { href: "#/" + view + "/" + encodeURIComponent(id) }, label);
  }

  function json(value) {
    return JSON.stringify(value, null, 2) ?? "null";
  }

  function person(subject) {
    return subject && subject.sub ? subject.sub + " (" + subject.issuer + ")" : "—";
  }

  function agent(principal) {
    return principal || "—";
  }

  function timeLeft(expiresAt) {
    const ms = Date.parse(expiresAt) - Date.now();
    if (!(ms > 0)) return "expired";
    const s = Math.floor(ms / 1000);
    return (s >= 60 ? Math.floor(s / 60) + " min " : "") + (s % 60) + " s";
  }

  function setStatus(message, bad) {
    const s = document.getElementById("status");
    s.textContent = "";
    s.appendChild(text(message || ""));
    s.className = bad ? "bad" : "";
  }

  function table(headers, rows) {
    const head = el("tr", {}, ...headers.map((h) => el("th", {}, h)));
    return el("table", {}, el("thead", {}, head), el("tbody", {}, ...rows));
  }

  function dl(pairs) {
    const list = el("dl");
    for (const [k, v] of pairs) {
      list.appendChild(el("dt", {}, k));
      list.appendChild(el("dd", {}, v instanceof Node ? v : text(v)));
    }
    return list;
  }

  // ---- the server ----------------------------------------------------------------------

  async function call(method, path, body) {
    const init = { method, credentials: "same-origin", headers: {} };
    if (method !== "GET") {
      init.headers["Content-Type"] = "application/json";
      init.headers["X-Airlock-CSRF"] = state.csrf;
      init.body = JSON.stringify(body || {});
    }
    const resp = await fetch(path, init);
    // `raw`: the answer's text, which JSON is shown from (jsonText); `data` only to navigate.
    const raw = await resp.text();
    let data = null;
    try {
      data = JSON.parse(raw);
    } catch (e) {
      data = { error: { kind: "bad_response", message: "the server answered " + resp.status } };
    }
    if (resp.status === 401 && path !== "/console/session") signedOut(data);
    return { status: resp.status, ok: resp.ok, data, raw };
  }

  function api(path) {
    return call("GET", "/console/api/" + path);
  }

  function errorText(r) {
    const e = r.data && r.data.error;
    return e ? e.kind + ": " + e.message : "HTTP " + r.status;
  }

  // ---- sign-in -------------------------------------------------------------------------

  function showSignedIn(who) {
    state.who = who;
    state.csrf = who.csrf;
    document.getElementById("sign-in").hidden = true;
    document.getElementById("nav").hidden = false;
    document.getElementById("sign-out").hidden = false;
    document.getElementById("view").hidden = false;
    const name = who.subject ? "user " + person(who.subject) : "agent " + agent(who.principal);
    const whoami = document.getElementById("whoami");
    whoami.textContent = "";
    whoami.appendChild(text("signed in as " + name));
    route();
  }

  function signedOut(data) {
    clearTimeout(state.timer);
    state.who = null;
    state.csrf = "";
    document.getElementById("sign-in").hidden = false;
    document.getElementById("nav").hidden = true;
    document.getElementById("sign-out").hidden = true;
    document.getElementById("view").hidden = true;
    document.getElementById("whoami").textContent = "";
    if (data && data.error) setStatus(data.error.message, true);
  }

  async function signIn(event) {
    event.preventDefault();
    const field = document.getElementById("credential");
    const r = await call("POST", "/console/session", { credential: field.value.trim() });
    field.value = "";
    if (!r.ok) return setStatus(errorText(r), true);
    setStatus("");
    showSignedIn(r.data);
  }

  // "Sign in with <issuer>" when identity.console is configured: the server starts the
  // login (state, nonce and PKCE stay on the server) and the browser goes to the provider.
  async function offerOidc() {
    const r = await call("GET", "/console/oidc");
    const box = document.getElementById("oidc");
    if (!r.ok || !r.data.issuer) return;
    const button = document.getElementById("oidc-sign-in");
    button.textContent = "";
    button.appendChild(text("Sign in with " + r.data.issuer));
    box.hidden = false;
  }

  async function oidcSignIn() {
    const r = await call("POST", "/console/oidc/login", {});
    if (!r.ok) return setStatus(errorText(r), true);
    const url = new URL(r.data.authorization_url);
    if (url.protocol !== "https:" && url.protocol !== "http:") return setStatus("the provider's URL is not http(s)", true);
    location.assign(url.href);
  }

  async function signOut() {
    await call("DELETE", "/console/session", {});
    signedOut(null);
    setStatus("signed out");
  }

  // ---- views ---------------------------------------------------------------------------

  function render(...nodes) {
    const view = document.getElementById("view");
    view.textContent = "";
    for (const n of nodes) view.appendChild(n);
  }

  function poll(fn) {
    clearTimeout(state.timer);
    const mine = state.route;
    state.timer = setTimeout(() => {
      if (state.route === mine && state.who) fn();
    }, POLL_MS);
  }

  function approvalRow(a) {
    const requester = el("span", {}, "user " + person(a.requested_by.subject), el("br"),
                         "agent " + agent(a.requested_by.principal));
    const cut = new TextEncoder().encode(a.arguments_preview).length < a.arguments_bytes;
    const more = cut ? " … (" + a.arguments_bytes + " bytes)" : "";
    const args = el("div", { class: "preview mono" }, a.arguments_preview + more);
    const hash = el("div", { class: "hash mono" }, "SHA-256 " + a.arguments_sha256);
    return el("tr", { "data-approval": a.id }, el("td", {}, link("approval", a.id, a.tool)), el("td", {}, a.risk || "—"),
              el("td", {}, requester), el("td", {}, args, hash),
              el("td", {}, a.approvals + " of " + a.approvers_required), el("td", {}, timeLeft(a.expires_at)));
  }

  async function viewApprovals() {
    const r = await api("approvals");
    if (!r.ok) return render(el("h1", {}, "Approvals"), el("p", { class: "bad" }, errorText(r)));
    const rows = r.data.approvals.map(approvalRow);
    const body = rows.length ? table(["Tool", "Risk", "Requested by", "Arguments (DLP-redacted)", "Approvals", "Time left"], rows)
                             : el("p", { class: "note", id: "no-approvals" }, "Nothing is waiting for you.");
    render(el("h1", {}, "Approvals waiting for you"), body);
    poll(viewApprovals);
  }

  // A <pre> of the JSON text `full` cut at ARGS_SHOWN characters, with a button that shows
  // all of it, and a warning when it holds invisible characters (anywhere, shown or not).
  function longText(id, full) {
    full = full ?? "null";
    const pre = el("pre", { id });
    pre.appendChild(jsonText(full.length > ARGS_SHOWN ? full.slice(0, ARGS_SHOWN) : full));
    const box = el("div", {}, pre);
    const hidden = countInvisible(full);
    if (hidden)
      box.insertBefore(el("p", { class: "bad invisible-warning", id: id + "-invisible" },
                          "Warning: this text contains " + hidden + " invisible or format character" + (hidden > 1 ? "s" : "") +
                          " (zero-width, bidi, tag, variation selector, unusual space, control...), shown as \u27E8U+XXXX\u27E9. " +
                          "They are part of what runs."), pre);
    if (full.length <= ARGS_SHOWN) return box;
    const more = el("button", { type: "button", id: "show-all-" + id }, "Show all " + full.length + " characters");
    more.addEventListener("click", () => {
      pre.textContent = "";
      pre.appendChild(jsonText(full));
      more.remove();
    });
    box.appendChild(el("p", { class: "note", id: id + "-truncated" },
                       "Truncated: " + ARGS_SHOWN + " of " + full.length + " characters shown. "));
    box.appendChild(more);
    return box;
  }

  // The arguments exactly as stored (arguments_json, the canonical text arguments_sha256 is
  // the hash of), and whether this browser computed the same hash from the text it shows.
  function argumentsBlock(a, hashCheck) {
    if (typeof a.arguments_json !== "string")
      return el("p", { class: "bad", id: "arguments-missing" }, "The server sent no arguments_json: nothing to approve from.");
    const box = longText("arguments", a.arguments_json);
    box.appendChild(el("p", { class: "hash mono" }, "SHA-256 of the arguments: " + a.arguments_sha256));
    box.appendChild(el("p", { class: hashCheck.ok ? "note" : "bad", id: "arguments-hash-check" }, hashCheck.message));
    return box;
  }

  // SHA-256 (hex) of the UTF-8 of `s`, or null where the browser has no WebCrypto (a page
  // not served over https or from localhost).
  async function sha256Hex(s) {
    if (!(window.crypto && crypto.subtle)) return null;
    const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s));
    return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
  }

  // ok: the shown text is what the server's hash covers (or it cannot be checked here);
  // a mismatch hides the decision buttons.
  async function checkArgumentsHash(a) {
    if (typeof a.arguments_json !== "string") return { ok: false, message: "no arguments text" };
    const computed = await sha256Hex(a.arguments_json);
    if (computed === null)
      return { ok: true, message: "This browser cannot compute SHA-256 here (not a secure context); the server checks it." };
    if (computed !== a.arguments_sha256)
      return { ok: false, message: "The text shown does not match the server's SHA-256 (" + computed + "): do not decide." };
    return { ok: true, message: "This browser computed the same SHA-256 from the text shown." };
  }

  function contextBlocks(c) {
    const findings = c.validator_findings.map((f) =>
      el("tr", {}, el("td", {}, f.severity), el("td", {}, f.rule), el("td", {}, f.line + ":" + f.col), el("td", {}, f.message)));
    const egress = c.egress.map((e) => el("tr", {}, el("td", {}, e.host), el("td", {}, String(e.port))));
    const creds = c.credentials.map((k) =>
      el("tr", {}, el("td", {}, k.env), el("td", {}, k.provider),
         el("td", {}, json(Object.fromEntries(Object.entries(k).filter(([n]) => n !== "env" && n !== "provider"))))));
    const none = (what) => el("p", { class: "note" }, what);
    return [
      el("h2", {}, "The validator's findings"),
      findings.length ? table(["Severity", "Rule", "At", "Message"], findings) : none("none"),
      el("h2", {}, "Redacted by DLP"),
      c.redactions.length ? el("p", {}, c.redactions.map((x) => x.detector + " (" + x.where + ")").join(", ")) : none("nothing"),
      el("h2", {}, "Egress the tool may reach"),
      egress.length ? table(["Host", "Port"], egress) : none("none: no network"),
      el("h2", {}, "Credentials it would get"),
      creds.length ? table(["Variable", "Provider", "Scope"], creds) : none("none"),
    ];
  }

  // The fields of a JSON Schema, depth first: [path, type, description, required].
  function schemaFields(schema, prefix, required, out, depth) {
    if (!schema || typeof schema !== "object" || depth > 6) return out;
    if (prefix) out.push([prefix, [].concat(schema.type ?? "").join(" | ") || "any", schema.description ?? "", required ? "yes" : ""]);
    const props = schema.properties && typeof schema.properties === "object" ? schema.properties : {};
    const needed = Array.isArray(schema.required) ? schema.required : [];
    for (const [name, sub] of Object.entries(props))
      schemaFields(sub, prefix ? prefix + "." + name : name, needed.includes(name), out, depth + 1);
    if (schema.items && typeof schema.items === "object") schemaFields(schema.items, (prefix || "") + "[]", false, out, depth + 1);
    return out;
  }

  // What the tool is: its description and its input schema's fields (from the configuration
  // now), beside the arguments.
  function toolFieldsBlock(c) {
    const rows = schemaFields(c.input_schema, "", false, [], 0).map((f) =>
      el("tr", {}, el("td", { class: "mono" }, f[0]), el("td", {}, f[1]), el("td", { class: "field-description" }, f[2]), el("td", {}, f[3])));
    return el("div", { id: "tool-fields" },
              el("h3", {}, "The tool's fields"),
              rows.length ? table(["Field", "Type", "Description", "Required"], rows)
                          : el("p", { class: "note" }, "The tool's input schema describes no fields."));
  }

  // The agent's stated reason ("reason" beside "arguments"): its words, shown as text.
  function agentReasonBlock(reason) {
    return reason ? el("p", { class: "agent-reason", id: "agent-reason" }, reason)
                  : el("p", { class: "note", id: "agent-reason" }, "The agent gave no reason.");
  }

  function decisionsBlock(a) {
    const rows = a.decisions.map((d) =>
      el("tr", {}, el("td", {}, d.decision), el("td", {}, person(d.approver)), el("td", {}, agent(d.relayed_by)),
         el("td", {}, d.reason), el("td", {}, d.at)));
    return rows.length ? table(["Decision", "By", "Relayed by", "Reason", "At"], rows) : el("p", { class: "note" }, "none yet");
  }

  function decideForm(a) {
    const reason = el("textarea", { id: "reason", rows: "2", placeholder: "reason (recorded in the audit log)" });
    const result = el("p", { id: "decision-result" });
    const send = async (verdict) => {
      const r = await call("POST", "/console/api/approvals/" + encodeURIComponent(a.id) + "/" + verdict,
                           { reason: reason.value, arguments_sha256: a.arguments_sha256 });
      result.textContent = "";
      result.className = r.ok ? "good" : "bad";
      result.appendChild(text(r.ok ? verdict + "d: the approval is now " + r.data.status : errorText(r)));
      if (r.ok) setTimeout(() => { location.hash = "#/invocation/" + encodeURIComponent(a.invocation_id); }, 600);
    };
    const approve = el("button", { type: "button", class: "approve", id: "approve" }, "Approve");
    const deny = el("button", { type: "button", class: "deny", id: "deny" }, "Deny");
    approve.addEventListener("click", () => send("approve"));
    deny.addEventListener("click", () => send("deny"));
    return el("div", { class: "decide" }, el("label", { for: "reason" }, "Reason"), reason, el("p", {}, approve, deny), result);
  }

  async function viewApproval(id) {
    const r = await api("approvals/" + encodeURIComponent(id));
    if (!r.ok) return render(el("h1", {}, "Approval"), el("p", { class: "bad" }, errorText(r)));
    const a = r.data;
    const facts = dl([
      ["Tool", a.tool], ["What it does", el("span", { id: "tool-description" }, a.context.description || "(no description)")],
      ["Risk", a.context.risk || "—"], ["Status", el("span", { id: "approval-status" }, a.status)],
      ["User", person(a.requested_by.subject)], ["Agent", agent(a.requested_by.principal)],
      ["Requested", a.requested_at], ["Expires", a.expires_at + " (" + timeLeft(a.expires_at) + " left)"],
      ["Approvals", a.approvals + " of " + a.approvers_required],
      ["Invocation", link("invocation", a.invocation_id, a.invocation_id)],
    ]);
    const hashCheck = await checkArgumentsHash(a);
    render(el("h1", {}, "Approval " + a.id), facts, el("h2", {}, "The agent's reason"), agentReasonBlock(a.reason),
           el("h2", {}, "Arguments (DLP-redacted)"),
           el("div", { class: "beside" }, argumentsBlock(a, hashCheck), toolFieldsBlock(a.context)),
           ...contextBlocks(a.context), el("h2", {}, "Decisions"), decisionsBlock(a),
           a.may_decide && hashCheck.ok ? decideForm(a)
                                        : el("p", { class: "note", id: "no-decision" }, "You may not decide this approval."));
    if (a.status === "pending") pollStatus(id, a.status);
  }

  // An open approval page is re-rendered only when its status changes (not while one types).
  function pollStatus(id, status) {
    poll(async () => {
      const r = await api("approvals/" + encodeURIComponent(id));
      if (r.ok && r.data.status !== status) return viewApproval(id);
      pollStatus(id, status);
    });
  }

  function filtersForm(values) {
    const input = (name, label, type) => el("label", {}, label, el("input", { name, type: type || "text", value: values[name] || "" }));
    const status = el("select", { name: "status" }, ...["", "ok", "error", "denied", "running", "pending_approval"].map(
      (s) => { const o = el("option", { value: s }, s || "any"); if (values.status === s) o.selected = true; return o; }));
    const form = el("form", { class: "filters", id: "filters" }, input("tool", "Tool"), input("user", "User"),
                    input("agent", "Agent"), el("label", {}, "Status", status),
                    input("since", "Since (UTC, 2026-12-02T01:00:00Z)"), input("until", "Until (UTC)"),
                    el("button", { type: "submit" }, "Filter"));
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const q = new URLSearchParams();
      for (const [k, v] of new FormData(form).entries()) if (v) q.set(k, v);
      location.hash = "#/history?" + q.toString();
    });
    return form;
  }

  function invocationRow(i) {
    return el("tr", { "data-invocation": i.id }, el("td", {}, link("invocation", i.id, i.id)), el("td", {}, i.tool),
              el("td", {}, i.status), el("td", {}, person(i.subject)), el("td", {}, agent(i.actor && i.actor.principal)),
              el("td", {}, i.started_at || ""), el("td", {}, i.verdict || i.error_kind || ""));
  }

  async function viewHistory(query) {
    const values = Object.fromEntries(new URLSearchParams(query).entries());
    const r = await api("invocations" + (query ? "?" + query : ""));
    const form = filtersForm(values);
    if (!r.ok) return render(el("h1", {}, "Invocations"), form, el("p", { class: "bad" }, errorText(r)));
    const rows = r.data.invocations.map(invocationRow);
    const scope = r.data.scope === "all" ? "every invocation" : "your invocations only";
    render(el("h1", {}, "Invocations"), el("p", { class: "note" }, "Showing " + scope + ", newest first."), form,
           rows.length ? table(["Id", "Tool", "Status", "User", "Agent", "Started", "Outcome"], rows)
                       : el("p", { class: "note" }, "No invocation matches."));
    poll(() => refreshHistory(query));
  }

  // The table only: the filter form keeps what is being typed.
  async function refreshHistory(query) {
    const r = await api("invocations" + (query ? "?" + query : ""));
    const old = document.querySelector("#view table");
    if (r.ok && old && r.data.invocations.length) {
      old.replaceWith(table(["Id", "Tool", "Status", "User", "Agent", "Started", "Outcome"], r.data.invocations.map(invocationRow)));
    }
    poll(() => refreshHistory(query));
  }

  // Who approved (or denied) it, when and why, and the agent's reason for the call.
  function invocationApprovalBlocks(ap) {
    const rows = (ap.decisions || []).map((d) =>
      el("tr", {}, el("td", {}, d.decision), el("td", {}, person(d.approver)), el("td", {}, agent(d.relayed_by)),
         el("td", {}, d.reason), el("td", {}, d.at)));
    return [
      el("h2", {}, "Approval"),
      dl([["Approval", link("approval", ap.id, ap.id)], ["Status", el("span", { id: "invocation-approval-status" }, ap.status)],
          ["Approvals", ap.approvals + " of " + ap.approvers], ["Decided", ap.decided_at || "—"],
          ["The agent's reason", el("span", { id: "invocation-agent-reason" }, ap.reason || "(none given)")]]),
      rows.length ? el("div", { id: "invocation-decisions" }, table(["Decision", "By", "Relayed by", "Reason", "At"], rows))
                  : el("p", { class: "note", id: "invocation-decisions" }, "no decision yet"),
    ];
  }

  async function viewInvocation(id) {
    const r = await api("invocations/" + encodeURIComponent(id));
    if (!r.ok) return render(el("h1", {}, "Invocation"), el("p", { class: "bad" }, errorText(r)));
    const i = r.data;
    const proof = i.audit && i.audit.index !== undefined
      ? link("proof", String(i.audit.index), "record " + i.audit.index + ": its inclusion proof") : "—";
    render(el("h1", {}, "Invocation " + i.id),
           dl([["Tool", i.tool], ["Status", el("span", { id: "invocation-status" }, i.status)],
               ["User", person(i.subject)], ["Agent", agent(i.actor && i.actor.principal)],
               ["Verdict", i.verdict || "—"], ["Error", i.error ? i.error.kind + ": " + i.error.message : "—"],
               ["Audit", proof]]),
           ...(i.approval ? invocationApprovalBlocks(i.approval) : []),
           el("h2", {}, "Output"), longText("invocation-output", rawMember(r.raw, "output")),
           el("h2", {}, "The full record"), longText("invocation-record", r.raw));
    if (["running", "pending_approval", "suspended"].includes(i.status)) poll(() => viewInvocation(id));
  }

  async function viewAudit() {
    const r = await api("audit/checkpoint");
    if (!r.ok) return render(el("h1", {}, "Audit log"), el("p", { class: "bad" }, errorText(r)));
    const cp = r.data.checkpoint || {};
    const verify = el("button", { type: "button", id: "verify" }, "Verify now");
    const result = el("div", { id: "verify-result" });
    verify.addEventListener("click", async () => {
      result.textContent = "verifying…";
      const v = await api("audit/verify");
      result.textContent = "";
      if (!v.ok) return result.appendChild(el("p", { class: "bad" }, errorText(v)));
      const line = v.data.intact ? "intact: " + v.data.records + " records, " + v.data.checkpoints + " checkpoints"
                                 : "NOT intact: " + (v.data.headline || "see the report");
      result.appendChild(el("p", { class: v.data.intact ? "good" : "bad" }, line));
      result.appendChild(el("pre", {}, jsonText(v.raw)));
    });
    const index = el("input", { id: "proof-index", type: "number", min: "0", value: "0" });
    const prove = el("button", { type: "button", id: "prove" }, "Show the inclusion proof");
    prove.addEventListener("click", () => { location.hash = "#/proof/" + encodeURIComponent(index.value); });
    render(el("h1", {}, "Audit log"), el("h2", {}, "The latest signed checkpoint"),
           dl([["Origin", cp.origin], ["Size", String(cp.size)], ["Root", cp.root], ["Time", cp.time ? new Date(cp.time).toISOString() : "—"],
               ["Key id", r.data.key_id], ["Signature", r.data.signature]]),
           el("p", { class: "note" }, "Verify now: the server reads the whole log again and checks every record, every "
              + "checkpoint's signature and their consistency (as airlock audit verify does)."),
           verify, result, el("h2", {}, "The inclusion proof of one record"), el("p", {}, index, " ", prove));
  }

  async function viewProof(index) {
    const r = await api("audit/proof/" + encodeURIComponent(index));
    render(el("h1", {}, "Inclusion proof of record " + index),
           r.ok ? el("pre", { id: "proof" }, jsonText(r.raw)) : el("p", { class: "bad" }, errorText(r)),
           el("p", {}, el("a", { href: "#/audit" }, "Back to the audit log")));
  }

  // ---- sessions and their terminal -------------------------------------------------------

  function sessionRow(x) {
    const user = x.owner && x.owner.user ? x.owner.user.sub : "";
    return el("tr", { "data-session": x.id }, el("td", {}, link("terminal", x.id, x.id)), el("td", {}, x.template),
              el("td", {}, x.state), el("td", {}, agent(x.owner && x.owner.principal)), el("td", {}, user),
              el("td", {}, String(x.execs || 0)));
  }

  async function viewSessions() {
    const r = await api("sessions");
    if (!r.ok) return render(el("h1", {}, "Sessions"), el("p", { class: "bad" }, errorText(r)));
    const rows = r.data.sessions.map(sessionRow);
    render(el("h1", {}, "Sessions"),
           el("p", { class: "note" }, "Your sessions (every owner's if you manage sessions; a terminal is its owner's only)."),
           rows.length ? table(["Id (its terminal)", "Template", "State", "Agent", "User", "Execs"], rows)
                       : el("p", { class: "note" }, "No session."));
  }

  // What a terminal shows, kept as lines of text: printable characters overwrite at the cursor;
  // \r, \n, backspace and the few escape sequences a shell's line editing uses move it or erase;
  // every other escape sequence is dropped. Only ever shown with textContent.
  class Screen {
    constructor(node) { this.node = node; this.lines = [""]; this.col = 0; this.pending = ""; }
    write(text) {
      text = this.pending + text;
      this.pending = "";
      for (let i = 0; i < text.length; i++) {
        const c = text[i];
        if (c === "\x1b") {
          const m = /^\x1b(\[[0-?]*[ -\/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][0-9A-Za-z]|[=>78DEHMc])/.exec(text.slice(i));
          if (!m) { this.pending = text.slice(i); break; }  // the rest of it comes next
          this.escape(m[1]);
          i += m[0].length - 1;
        } else if (c === "\r") this.col = 0;
        else if (c === "\n") { this.lines.push(""); this.col = 0; }
        else if (c === "\b") this.col = Math.max(0, this.col - 1);
        else if (c >= " " || c === "\t") this.put(c === "\t" ? " " : c);
      }
      if (this.lines.length > 2000) this.lines.splice(0, this.lines.length - 2000);
      this.node.textContent = this.lines.join("\n");
      this.node.scrollTop = this.node.scrollHeight;
    }
    put(c) {
      const last = this.lines.length - 1, line = this.lines[last].padEnd(this.col, " ");
      this.lines[last] = line.slice(0, this.col) + c + line.slice(this.col + 1);
      this.col += 1;
    }
    escape(seq) {
      const last = this.lines.length - 1, n = parseInt(seq.slice(1), 10) || 1, final = seq[seq.length - 1];
      if (seq[0] !== "[") return;
      if (final === "K") this.lines[last] = this.lines[last].slice(0, this.col);  // erase to the end of the line
      else if (final === "C") this.col += n;
      else if (final === "D") this.col = Math.max(0, this.col - n);
      else if (final === "J" && seq.startsWith("[2")) { this.lines = [""]; this.col = 0; }
    }
  }

  // The bytes a key sends to a terminal (null: the browser keeps it).
  function keyBytes(e) {
    const named = { Enter: "\r", Backspace: "\x7f", Tab: "\t", Escape: "\x1b", ArrowUp: "\x1b[A", ArrowDown: "\x1b[B",
                    ArrowRight: "\x1b[C", ArrowLeft: "\x1b[D", Home: "\x1b[H", End: "\x1b[F", Delete: "\x1b[3~" };
    if (e.ctrlKey && !e.altKey && e.key.length === 1 && /[a-z@\[\\\]^_]/i.test(e.key))
      return String.fromCharCode(e.key.toUpperCase().charCodeAt(0) & 0x1f);
    if (named[e.key]) return named[e.key];
    if (e.key.length === 1 && !e.ctrlKey && !e.metaKey) return (e.altKey ? "\x1b" : "") + e.key;
    return null;
  }

  // The terminal's size in characters, from the element's size and one character's.
  function terminalSize(node) {
    const probe = el("span", {}, "M");
    node.appendChild(probe);
    const box = probe.getBoundingClientRect();
    probe.remove();
    const cols = Math.max(20, Math.min(1000, Math.floor(node.clientWidth / (box.width || 8))));
    const rows = Math.max(5, Math.min(1000, Math.floor(node.clientHeight / (box.height || 16))));
    return { rows, cols };
  }

  function viewTerminal(id) {
    const screenNode = el("pre", { id: "terminal", class: "terminal", tabindex: "0" });
    const status = el("p", { id: "terminal-status", class: "note" }, "connecting…");
    render(el("h1", {}, "Terminal on session " + id), screenNode, status,
           el("p", {}, el("a", { href: "#/sessions" }, "Back to the sessions")));
    const screen = new Screen(screenNode);
    const size = terminalSize(screenNode);
    const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/console/api/sessions/" +
                encodeURIComponent(id) + "/terminal?rows=" + size.rows + "&cols=" + size.cols;
    const socket = new WebSocket(url);
    socket.binaryType = "arraybuffer";
    state.terminal = socket;
    const decoder = new TextDecoder();
    const encoder = new TextEncoder();
    socket.onopen = () => { status.textContent = "connected: type here"; screenNode.focus(); };
    socket.onmessage = (m) => {
      if (typeof m.data !== "string") return screen.write(decoder.decode(m.data, { stream: true }));
      let c = null;
      try { c = JSON.parse(m.data); } catch (e) { return; }
      if (c.type === "exit") status.textContent = "ended: " + c.verdict + (c.exit_code !== undefined ? ", exit code " + c.exit_code : "");
      if (c.type === "error") status.textContent = "refused: " + c.message;
    };
    socket.onclose = () => { if (status.textContent.startsWith("connect")) status.textContent = "closed (not yours, or it has ended)"; };
    const send = (bytes) => { if (socket.readyState === WebSocket.OPEN) socket.send(encoder.encode(bytes)); };
    screenNode.addEventListener("keydown", (e) => {
      const bytes = keyBytes(e);
      if (bytes === null) return;
      e.preventDefault();
      send(bytes);
    });
    screenNode.addEventListener("paste", (e) => { e.preventDefault(); send(e.clipboardData.getData("text")); });
    const resized = () => {
      if (socket.readyState !== WebSocket.OPEN || !document.body.contains(screenNode)) return;
      const s = terminalSize(screenNode);
      socket.send(JSON.stringify({ type: "resize", rows: s.rows, cols: s.cols }));
    };
    window.addEventListener("resize", resized);
  }

  // ---- routing -------------------------------------------------------------------------

  function route() {
    if (!state.who) return;
    clearTimeout(state.timer);
    const hash = location.hash.replace(/^#\/?/, "") || "approvals";
    state.route = hash;
    const [path, query] = [hash.split("?")[0], hash.split("?").slice(1).join("?")];
    const [view, ...rest] = path.split("/");
    const id = decodeURIComponent(rest.join("/"));
    if (state.terminal) state.terminal.close();  // leaving a terminal hangs it up
    state.terminal = null;
    for (const n of ["approvals", "history", "audit", "sessions"])
      document.getElementById("nav-" + n).className =
        view === n || (view === "approval" && n === "approvals") || (view === "terminal" && n === "sessions") ? "current" : "";
    if (view === "approval") return viewApproval(id);
    if (view === "history") return viewHistory(query);
    if (view === "invocation") return viewInvocation(id);
    if (view === "audit") return viewAudit();
    if (view === "proof") return viewProof(id);
    if (view === "sessions") return viewSessions();
    if (view === "terminal") return viewTerminal(id);
    return viewApprovals();
  }

  async function start() {
    document.getElementById("sign-in-form").addEventListener("submit", signIn);
    document.getElementById("sign-out").addEventListener("click", signOut);
    document.getElementById("oidc-sign-in").addEventListener("click", oidcSignIn);
    offerOidc();
    window.addEventListener("hashchange", route);
    const r = await call("GET", "/console/session");
    if (r.ok) showSignedIn(r.data);
    else signedOut(null);
  }

  document.addEventListener("DOMContentLoaded", start);
})();
