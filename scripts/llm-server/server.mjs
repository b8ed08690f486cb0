// A minimal OpenAI-compatible chat server around node-llama-cpp, for Sayri's real-model tests.
//
// Usage: node server.mjs MODEL.gguf PORT   (PORT 0 picks a free port)
// Listens on 127.0.0.1 only. Prints one line "listening http://127.0.0.1:<port>" on stdout once
// the model is loaded. Serves GET /health, GET /v1/models and POST /v1/chat/completions (stream
// true or false), one generation at a time (requests queue). CPU only; never builds or downloads
// anything.
//
// Environment (set by the Sayri daemon when it supervises this server):
//   SAYRI_LISTEN_FD    a listening TCP socket on 127.0.0.1 that the daemon bound itself and keeps
//                      open: the server accepts on it instead of binding PORT, so no other
//                      process can take the port while the server restarts
//   SAYRI_SECRETS_FD   a socket carrying {"SAYRI_LLM_TOKEN": "..."} (read to its end at start):
//                      then every request but GET /health must carry "Authorization: Bearer
//                      <token>" (other local users can reach a loopback port; they cannot use the
//                      model). The token never travels in the environment or the arguments.
//   SAYRI_LLM_THREADS  generation threads (default 1)
//
// Decoding: the request's "temperature", "top_k", "top_p", "min_p", "seed", "repeat_penalty",
// "frequency_penalty", "presence_penalty" and "stop" (strings) are used when given. Without
// "repeat_penalty", tokens of the last 64 are penalised by 1.1 (tiny models otherwise loop).
// A reply that degenerates (the same line 6 times in a row, or one character 64 times) is
// ended there with finish_reason "stop" instead of running to the token limit.
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { getLlama, LlamaChatSession } from "node-llama-cpp";

const [modelPath, portArg] = process.argv.slice(2);
// The daemon's secrets, read before the model loads: {"SAYRI_LLM_TOKEN": "..."}.
function passedSecrets() {
    const fd = process.env.SAYRI_SECRETS_FD;
    if (fd === undefined) return {};
    const raw = fs.readFileSync(Number(fd), "utf8");
    fs.closeSync(Number(fd));
    return JSON.parse(raw);
}

const token = passedSecrets().SAYRI_LLM_TOKEN ?? "";
delete process.env.SAYRI_SECRETS_FD;
if (!modelPath) {
    console.error("usage: node server.mjs MODEL.gguf PORT");
    process.exit(2);
}
const modelId = path.basename(modelPath, ".gguf");

const llama = await getLlama({ gpu: false, build: "never" });
const model = await llama.loadModel({ modelPath });
// One thread: llama.cpp's spinning thread pool collapses (seconds per token) when other jobs
// share the 2 cores; a single thread stays at tens of tokens/s. SAYRI_LLM_THREADS overrides.
const threads = Number(process.env.SAYRI_LLM_THREADS ?? 1);
const context = await model.createContext({ contextSize: 2048, threads });
const session = new LlamaChatSession({ contextSequence: context.getSequence() });

// The session's own initial history carries node-llama-cpp's default system prompt, which this
// tiny model answers well with; it is used when a request brings no system message.
const defaultHistory = session.getChatHistory();
let queue = Promise.resolve();
let counter = 0;

function toHistory(messages) {
    const history = messages.some((m) => m.role === "system") ? [] : [...defaultHistory];
    for (const m of messages) {
        const text = typeof m.content === "string" ? m.content : "";
        if (m.role === "system") history.push({ type: "system", text });
        else if (m.role === "assistant") history.push({ type: "model", response: [text] });
        else history.push({ type: "user", text });
    }
    return history;
}

// The generation options a request asks for (see the header), with the defaults.
function decoding(body) {
    const num = (v) => typeof v === "number" && Number.isFinite(v);
    const options = {};
    if (num(body.max_tokens) && body.max_tokens > 0) options.maxTokens = body.max_tokens;
    if (num(body.temperature)) options.temperature = body.temperature;
    if (num(body.top_k)) options.topK = body.top_k;
    if (num(body.top_p)) options.topP = body.top_p;
    if (num(body.min_p)) options.minP = body.min_p;
    if (num(body.seed)) options.seed = body.seed;
    options.repeatPenalty = {
        lastTokens: 64,
        penalty: num(body.repeat_penalty) ? body.repeat_penalty : 1.1,
        frequencyPenalty: num(body.frequency_penalty) ? body.frequency_penalty : undefined,
        presencePenalty: num(body.presence_penalty) ? body.presence_penalty : undefined,
    };
    const stop = typeof body.stop === "string" ? [body.stop] : body.stop;
    if (Array.isArray(stop)) {
        const triggers = stop.filter((t) => typeof t === "string" && t !== "");
        if (triggers.length > 0) options.customStopTriggers = triggers;
    }
    return options;
}

// Whether the reply so far ends in a loop: one line 6 times in a row (blank lines between
// them aside), or one character 64 times.
function degenerate(text) {
    if (/(.)\1{63}$/su.test(text)) return true;
    const lines = text.split("\n");
    lines.pop(); // the line still being written
    const full = lines.filter((l) => l.trim() !== "");
    if (full.length < 6) return false;
    const tail = full.slice(-6);
    return tail.every((l) => l === tail[0]);
}

async function generate(req, res, body) {
    const messages = Array.isArray(body.messages) ? body.messages : [];
    const last = messages.length > 0 ? messages[messages.length - 1] : null;
    if (!last || last.role !== "user") {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "the last message must come from the user" } }));
        return;
    }
    session.setChatHistory(toHistory(messages.slice(0, -1)));
    const id = `chatcmpl-${++counter}`;
    const created = Math.floor(Date.now() / 1000);
    const stream = body.stream === true;
    const abort = new AbortController();
    res.on("close", () => abort.abort());
    const chunk = (delta, finish) => ({
        id, object: "chat.completion.chunk", created, model: modelId,
        choices: [{ index: 0, delta, finish_reason: finish }],
    });
    if (stream) {
        res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
        res.write(`data: ${JSON.stringify(chunk({ role: "assistant", content: "" }, null))}\n\n`);
    }
    let completion = 0;
    let text = "";
    const runaway = new AbortController();
    const options = {
        signal: AbortSignal.any([abort.signal, runaway.signal]),
        stopOnAbortSignal: true,
        onTextChunk: (piece) => {
            completion += 1;
            text += piece;
            if (stream) res.write(`data: ${JSON.stringify(chunk({ content: piece }, null))}\n\n`);
            if (degenerate(text)) runaway.abort();
        },
        ...decoding(body),
    };
    const result = await session.promptWithMeta(last.content ?? "", options);
    if (abort.signal.aborted) return;
    const finish = result.stopReason === "maxTokens" && !runaway.signal.aborted ? "length" : "stop";
    const prompt = model.tokenize(messages.map((m) => m.content ?? "").join("\n")).length;
    const usage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
    if (stream) {
        const last = chunk({}, finish);
        if (body.stream_options && body.stream_options.include_usage) last.usage = usage;
        res.write(`data: ${JSON.stringify(last)}\n\n`);
        res.end("data: [DONE]\n\n");
    } else {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({
            id, object: "chat.completion", created, model: modelId, usage,
            choices: [{ index: 0, message: { role: "assistant", content: result.responseText }, finish_reason: finish }],
        }));
    }
}


function authorized(req) {
    if (token === "") return true;
    const got = Buffer.from(req.headers.authorization ?? "");
    const want = Buffer.from(`Bearer ${token}`);
    return got.length === want.length && crypto.timingSafeEqual(got, want);
}

const server = http.createServer((req, res) => {
    const url = new URL(req.url, "http://localhost");
    const open = req.method === "GET" && url.pathname === "/health";
    if (!open && !authorized(req)) {
        res.writeHead(401, { "content-type": "application/json" });
        res.end('{"error":{"message":"missing or wrong bearer token"}}');
        return;
    }
    if (req.method === "GET" && url.pathname === "/health") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end('{"status":"ok"}');
        return;
    }
    if (req.method === "GET" && url.pathname === "/v1/models") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ object: "list", data: [{ id: modelId, object: "model", owned_by: "local" }] }));
        return;
    }
    if (req.method === "POST" && url.pathname === "/v1/chat/completions") {
        let raw = "";
        req.setEncoding("utf8");
        req.on("data", (d) => { raw += d; });
        req.on("end", () => {
            let body;
            try {
                body = JSON.parse(raw);
            } catch {
                res.writeHead(400, { "content-type": "application/json" });
                res.end('{"error":{"message":"request body is not JSON"}}');
                return;
            }
            queue = queue.then(() => generate(req, res, body)).catch((err) => {
                console.error(err);
                if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
                res.end(JSON.stringify({ error: { message: String(err && err.message || err) } }));
            });
        });
        return;
    }
    res.writeHead(404, { "content-type": "application/json" });
    res.end('{"error":{"message":"not found"}}');
});

const listenFd = process.env.SAYRI_LISTEN_FD;
delete process.env.SAYRI_LISTEN_FD;
const onListening = () => console.log(`listening http://127.0.0.1:${server.address().port}`);
if (listenFd !== undefined) server.listen({ fd: Number(listenFd) }, onListening);
else server.listen(Number(portArg ?? 0), "127.0.0.1", onListening);

// Stop cleanly when asked (the supervisor sends SIGTERM).
for (const sig of ["SIGTERM", "SIGINT"]) {
    process.on(sig, () => process.exit(0));
}
