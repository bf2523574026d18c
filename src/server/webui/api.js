// What chat.js and phase.js share: the API key, JSON requests, reading a
// stream of server-sent events from a fetch() response (EventSource cannot
// send the API key), and making elements.
"use strict";

const api = {
  key() {
    return localStorage.getItem("cohort.api_key") || "";
  },
  headers(extra) {
    const h = Object.assign({}, extra || {});
    const key = api.key();
    if (key) h.Authorization = "Bearer " + key;
    return h;
  },
  async json(path, body, signal) {
    const init = { headers: api.headers(body ? { "Content-Type": "application/json" } : {}), signal };
    if (body) { init.method = "POST"; init.body = JSON.stringify(body); }
    const r = await fetch(path, init);
    const data = await r.json().catch(() => ({}));
    if (!r.ok) throw api.error(r.status, data);
    return data;
  },
  error(status, data) {
    const e = new Error((data && data.error && data.error.message) || "HTTP " + status);
    e.status = status;
    return e;
  },
  // Calls onEvent(parsed JSON) for each "data:" line of the response's
  // stream, until it ends, the signal aborts, or onEvent returns false.
  async readEvents(response, onEvent) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, end).replace(/\r$/, "");
        buffer = buffer.slice(end + 1);
        if (!line.startsWith("data: ")) continue;
        const payload = line.slice(6);
        if (payload === "[DONE]") return;
        if (onEvent(JSON.parse(payload)) === false) { reader.cancel(); return; }
      }
    }
  },
};

function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}
