// The chat view: a conversation on /v1/chat/completions, streamed, with a
// stop button, the system message and the sampling settings (defaults from
// /props), and each answer's tokens/s.
"use strict";

const chat = {
  history: [],       // [{role, content}] of this conversation
  controller: null,  // AbortController of the answer being streamed
  fields: ["temperature", "top_k", "top_p", "min_p", "max_tokens", "seed"],
};

function $(id) { return document.getElementById(id); }

function addMessage(role, text) {
  const m = el("div", "msg " + role);
  m.appendChild(el("span", "text", text));
  $("messages").appendChild(m);
  $("messages").scrollTop = $("messages").scrollHeight;
  return m;
}

function samplingFields() {
  const body = {};
  for (const f of chat.fields) {
    const v = $(f).value.trim();
    if (v !== "") body[f] = Number(v);
  }
  return body;
}

function setBusy(busy) {
  $("send").disabled = busy;
  $("stop").disabled = !busy;
}

function answerMeta(timings, usage, nChunks, t0, tFirst, tEnd, stopped) {
  const parts = [];
  const n = usage ? usage.completion_tokens : nChunks;
  parts.push(n + " tokens");
  let rate = timings && timings.predicted_per_second;
  if (!(rate > 0) && tFirst && tEnd > tFirst && nChunks > 1) rate = (nChunks - 1) / ((tEnd - tFirst) / 1000);
  if (rate > 0) parts.push(rate.toFixed(1) + " tokens/s");
  if (tFirst) parts.push("first token after " + Math.round(tFirst - t0) + " ms");
  if (stopped) parts.push("stopped");
  return parts.join(" · ");
}

async function send(text) {
  const messages = [];
  const system = $("system").value.trim();
  if (system) messages.push({ role: "system", content: system });
  chat.history.push({ role: "user", content: text });
  messages.push(...chat.history);
  addMessage("user", text);
  const answer = addMessage("assistant", "");
  const textEl = answer.querySelector(".text");
  const meta = el("span", "meta", "…");
  answer.appendChild(meta);
  answer.dataset.state = "streaming";
  const body = Object.assign({ messages, stream: true, stream_options: { include_usage: true } }, samplingFields());
  chat.controller = new AbortController();
  setBusy(true);
  const t0 = performance.now();
  let tFirst = 0, tEnd = 0, nChunks = 0, timings = null, usage = null, stopped = false;
  try {
    const r = await fetch("/v1/chat/completions", {
      method: "POST", headers: api.headers({ "Content-Type": "application/json" }),
      body: JSON.stringify(body), signal: chat.controller.signal,
    });
    if (!r.ok) throw api.error(r.status, await r.json().catch(() => ({})));
    await api.readEvents(r, (ev) => {
      if (ev.error) throw new Error(ev.error.message);
      if (ev.timings) timings = ev.timings;
      if (ev.usage) usage = ev.usage;
      const delta = ev.choices && ev.choices[0] && ev.choices[0].delta;
      if (delta && delta.content) {
        if (!tFirst) tFirst = performance.now();
        nChunks += 1;
        textEl.textContent += delta.content;
        $("messages").scrollTop = $("messages").scrollHeight;
      }
      return true;
    });
  } catch (e) {
    if (e.name === "AbortError") {
      stopped = true;
    } else {
      answer.classList.add("error");
      textEl.textContent += (textEl.textContent ? "\n" : "") + "error: " + e.message;
    }
  }
  tEnd = performance.now();
  chat.controller = null;
  setBusy(false);
  chat.history.push({ role: "assistant", content: textEl.textContent });
  meta.textContent = answerMeta(timings, usage, nChunks, t0, tFirst, tEnd, stopped);
  answer.dataset.state = stopped ? "stopped" : "done";
}

async function loadProps() {
  try {
    const p = await api.json("/props");
    const d = p.default_generation_settings;
    $("model-name").textContent = p.model_alias;
    $("model-info").textContent = "context " + d.n_ctx + " tokens per request · " + p.total_slots + " slots";
    const params = d.params;
    for (const f of chat.fields) {
      const v = f === "max_tokens" ? params.n_predict : params[f];
      const unset = v === undefined || v === null || (f === "max_tokens" && v < 1);
      if ($(f).value === "" && !unset) $(f).value = v;
    }
    $("server-status").textContent = "";
  } catch (e) {
    $("server-status").textContent = e.status === 503 ? "loading the model…" : e.message;
    setTimeout(loadProps, e.status === 401 ? 5000 : 1000);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("api_key").value = api.key();
  $("api_key").addEventListener("change", () => {
    localStorage.setItem("cohort.api_key", $("api_key").value.trim());
    loadProps();
  });
  $("chat-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const text = $("prompt").value.trim();
    if (!text || chat.controller) return;
    $("prompt").value = "";
    send(text);
  });
  $("prompt").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      $("chat-form").requestSubmit();
    }
  });
  $("stop").addEventListener("click", () => chat.controller && chat.controller.abort());
  $("clear").addEventListener("click", () => {
    if (chat.controller) chat.controller.abort();
    chat.history = [];
    $("messages").textContent = "";
  });
  loadProps();
});
