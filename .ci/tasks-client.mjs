// A real tasks client against the reference server: the official
// @modelcontextprotocol/ext-tasks package (on the official TypeScript client
// SDK) runs a slow_compute task to completion, cancels another, and answers
// the question of an input_required confirm_delete task.
//
//   node tasks-client.mjs stdio /path/to/mcpstdio
//   node tasks-client.mjs http http://127.0.0.1:PORT/mcp
//
// Prints one line per check and "N passed, M failed"; exits 1 when one failed.
// .ci/tasks-client installs the packages and runs it.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { createTaskSessionFromClient, resultFromTaskOutcome } from "@modelcontextprotocol/ext-tasks/client";

const [mode, target] = process.argv.slice(2);
if (!["stdio", "http"].includes(mode) || !target) {
  console.error("usage: node tasks-client.mjs stdio BINARY | http URL");
  process.exit(2);
}

const clientInfo = { name: "mcpstdio-tasks-client", version: "1.0.0" };
const clientCapabilities = { elicitation: {} };
const client = new Client(clientInfo, {
  capabilities: clientCapabilities,
  versionNegotiation: { mode: { pin: "2026-07-28" } },
});
const transport = mode === "stdio"
  ? new StdioClientTransport({ command: target, args: [], stderr: "inherit" })
  : new StreamableHTTPClientTransport(new URL(target));
await client.connect(transport);
if (client.getProtocolEra() !== "modern") throw new Error(`expected the 2026-07-28 era, got ${client.getProtocolEra()}`);

// rawDispatch sends the package's framed task requests on the client's own
// transport and routes their responses back before the SDK client sees them
// (the package asks the host for this: the SDK's codecs refuse the task wire
// shapes). Its ids are strings, so they never collide with the SDK's numbers.
const pending = new Map();
let nextId = 0;
const sdkOnMessage = transport.onmessage;
transport.onmessage = (message, extra) => {
  const waiter = typeof message?.id === "string" ? pending.get(message.id) : undefined;
  if (waiter === undefined) return sdkOnMessage?.call(transport, message, extra);
  pending.delete(message.id);
  waiter(message.error !== undefined
    ? { kind: "error", error: message.error }
    : { kind: "result", result: message.result });
};
const rawDispatch = (request, options) => new Promise((resolve, reject) => {
  const id = `tasks-client-${++nextId}`;
  pending.set(id, resolve);
  options?.signal?.addEventListener("abort", () => {
    if (pending.delete(id)) reject(options.signal.reason ?? new Error("aborted"));
  }, { once: true });
  transport.send({ jsonrpc: "2.0", id, ...request }).catch((err) => {
    if (pending.delete(id)) reject(err);
  });
});

const questions = [];
const session = createTaskSessionFromClient(client, {
  endpointId: `mcpstdio-${mode}`,
  rawDispatch,
  v2RequestFraming: { protocolVersion: "2026-07-28", clientInfo, clientCapabilities },
  onInputRequest: async (request, context) => {
    questions.push({ kind: request.kind, scope: context.scope, delivery: context.delivery });
    return { action: "accept", content: { confirm: true } };
  },
});

let passed = 0, failed = 0;
async function check(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`ok   ${mode} ${name}`);
  } catch (err) {
    failed++;
    console.log(`FAIL ${mode} ${name}: ${err?.stack ?? err}`);
  }
}
function expect(cond, what) { if (!cond) throw new Error(what); }
function text(result) { return result?.content?.map((b) => b.text).join("") ?? ""; }

try {
  await check("slow_compute runs as a task to completion", async () => {
    const execution = await session.callTool("slow_compute", { seconds: 1.5, label: "ci" });
    expect(execution.kind === "task", `expected a task, got ${execution.kind}`);
    const { outcome } = await execution.settle();
    expect(outcome.status === "completed", `outcome ${outcome.status}: ${outcome.error?.message ?? ""}`);
    const got = text(resultFromTaskOutcome(outcome));
    expect(got === "Computed ci in 1.5s", `result text ${JSON.stringify(got)}`);
  });
  await check("a running slow_compute task is cancelled", async () => {
    const execution = await session.callTool("slow_compute", { seconds: 60, label: "cancel-me" });
    expect(execution.kind === "task", `expected a task, got ${execution.kind}`);
    await execution.cancel();
    const { outcome } = await execution.settle();
    expect(outcome.status === "cancelled", `outcome ${outcome.status}`);
  });
  await check("an input_required confirm_delete task is answered", async () => {
    const execution = await session.callTool("confirm_delete", { filename: "report.txt" });
    expect(execution.kind === "task", `expected a task, got ${execution.kind}`);
    const { outcome } = await execution.settle();
    expect(outcome.status === "completed", `outcome ${outcome.status}: ${outcome.error?.message ?? ""}`);
    const got = text(resultFromTaskOutcome(outcome));
    expect(got === "Deleted report.txt", `result text ${JSON.stringify(got)}`);
    const asked = questions.filter((q) => q.scope === "task" && q.kind === "elicitation");
    expect(asked.length === 1 && asked[0].delivery === "task-update", `questions ${JSON.stringify(questions)}`);
  });
} finally {
  await session.close();
  await client.close();
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
