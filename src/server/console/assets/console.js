// The Airlock web console (docs/console.md). Everything shown is built with DOM APIs and
// textContent: no value from a tool or a user is ever parsed as HTML. Bidi overrides and
// other invisible controls are shown as escapes (\u202E) so they cannot reorder what an
// approver reads. The credential never reaches this script: the session is an HttpOnly
// cookie; the CSRF token lives in this closure only.
"use strict";
(() => {
  const POLL_MS = 2000;
  const ARGS_SHOWN = 64 * 1024;  // characters of the arguments shown before "show all"
  const state = { csrf: "", who: null, timer: 0, route: "", seen: "" };

  // ---- rendering helpers -------------------------------------------------------------

  // Bidi embeddings/overrides/isolates, marks, and C0/C1 controls other than \n and \t.
  const INVISIBLE = /[\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C\u0000-\u0008\u000B-\u001F\u007F-\u009F]/g;

  function hex4(ch) {
    return "\\u" + ch.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0");
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
      mark.title = "an invisible or direction-changing character, shown escaped";
      mark.textContent = hex4(m[0]);
      frag.appendChild(mark);
      last = m.index + m[0].length;
    }
    if (last < s.length) frag.appendChild(document.createTextNode(s.slice(last)));
    return frag;
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
    let data = null;
    try {
      data = await resp.json();
    } catch (e) {
      data = { error: { kind: "bad_response", message: "the server answered " + resp.status } };
    }
    if (resp.status === 401 && path !== "/console/session") signedOut(data);
    return { status: resp.status, ok: resp.ok, data };
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

  // A <pre> of `full` cut at ARGS_SHOWN characters, with a button that shows all of it.
  function longText(id, full) {
    const pre = el("pre", { id });
    pre.appendChild(text(full.length > ARGS_SHOWN ? full.slice(0, ARGS_SHOWN) : full));
    const box = el("div", {}, pre);
    if (full.length <= ARGS_SHOWN) return box;
    const more = el("button", { type: "button", id: "show-all-" + id }, "Show all " + full.length + " characters");
    more.addEventListener("click", () => {
      pre.textContent = "";
      pre.appendChild(text(full));
      more.remove();
    });
    box.appendChild(el("p", { class: "note", id: id + "-truncated" },
                       "Truncated: " + ARGS_SHOWN + " of " + full.length + " characters shown. "));
    box.appendChild(more);
    return box;
  }

  function argumentsBlock(a) {
    const box = longText("arguments", json(a.arguments));
    box.appendChild(el("p", { class: "hash mono" }, "SHA-256 of the arguments: " + a.arguments_sha256));
    return box;
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
      ["Tool", a.tool], ["Risk", a.context.risk || "—"], ["Status", el("span", { id: "approval-status" }, a.status)],
      ["User", person(a.requested_by.subject)], ["Agent", agent(a.requested_by.principal)],
      ["Requested", a.requested_at], ["Expires", a.expires_at + " (" + timeLeft(a.expires_at) + " left)"],
      ["Approvals", a.approvals + " of " + a.approvers_required],
      ["Invocation", link("invocation", a.invocation_id, a.invocation_id)],
    ]);
    render(el("h1", {}, "Approval " + a.id), facts, el("h2", {}, "Arguments (DLP-redacted)"), argumentsBlock(a),
           ...contextBlocks(a.context), el("h2", {}, "Decisions"), decisionsBlock(a),
           a.may_decide ? decideForm(a) : el("p", { class: "note", id: "no-decision" }, "You may not decide this approval."));
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
           el("h2", {}, "Output"), longText("invocation-output", json(i.output)),
           el("h2", {}, "The full record"), longText("invocation-record", json(i)));
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
      result.appendChild(el("pre", {}, json(v.data)));
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
           r.ok ? el("pre", { id: "proof" }, json(r.data)) : el("p", { class: "bad" }, errorText(r)),
           el("p", {}, el("a", { href: "#/audit" }, "Back to the audit log")));
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
    for (const n of ["approvals", "history", "audit"])
      document.getElementById("nav-" + n).className = view === n || (view === "approval" && n === "approvals") ? "current" : "";
    if (view === "approval") return viewApproval(id);
    if (view === "history") return viewHistory(query);
    if (view === "invocation") return viewInvocation(id);
    if (view === "audit") return viewAudit();
    if (view === "proof") return viewProof(id);
    return viewApprovals();
  }

  async function start() {
    document.getElementById("sign-in-form").addEventListener("submit", signIn);
    document.getElementById("sign-out").addEventListener("click", signOut);
    window.addEventListener("hashchange", route);
    const r = await call("GET", "/console/session");
    if (r.ok) showSignedIn(r.data);
    else signedOut(null);
  }

  document.addEventListener("DOMContentLoaded", start);
})();
