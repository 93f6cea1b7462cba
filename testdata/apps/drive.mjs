// Drives the reference server's app as a host renders it, in a headless
// Chromium: for each protocol era, a page served from the MCP server's origin
// runs host.js (bundled: host.bundle.js), which connects to the server, reads
// the app echo links to and renders it in a sandboxed iframe through the
// official AppBridge; then the checks below look at what the app shows. It
// also validates the app's page as HTML.
//
//   node drive.mjs MCP_URL HOST_BUNDLE CHROMIUM
//
// Prints one line per check and "N passed, M failed"; exits 1 when one
// failed, 2 when the browser could not be driven at all. .ci/apps installs
// the packages and runs it.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HtmlValidate } from "html-validate";
import { chromium } from "playwright-core";

const [mcpURL, bundlePath, executablePath] = process.argv.slice(2);
if (!mcpURL || !bundlePath || !executablePath) {
  console.error("usage: node drive.mjs MCP_URL HOST_BUNDLE CHROMIUM");
  process.exit(2);
}
const APP_MIME_TYPE = "text/html;profile=mcp-app";
const APP_URI = "ui://echo/view.html";
// Each wait is bounded, so that a page that never shows the text fails the
// run instead of hanging it.
const WAIT_MS = 30000;

let passed = 0;
let failed = 0;
function check(name, ok, detail) {
  if (ok) passed++;
  else failed++;
  console.log(`${ok ? "ok  " : "FAIL"} ${name}${ok || detail === undefined ? "" : `: ${detail}`}`);
}

const bundle = await readFile(bundlePath, "utf8");
const hostPage = `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>mcpstdio apps host</title></head>` +
  `<body><script type="module">${bundle.replaceAll("</script", "<\\/script")}</script></body></html>`;
const hostURL = new URL("/apps-host.html", mcpURL).href;

const userDataDir = await mkdtemp(join(tmpdir(), "mcpstdio-apps-chromium-"));
let context;
try {
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath,
    headless: true,
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
  });
} catch (err) {
  console.error(`could not start ${executablePath}: ${err.message}`);
  await rm(userDataDir, { recursive: true, force: true });
  process.exit(2);
}

let html;
try {
  // "" keeps the client's default, the initialize era.
  for (const [era, version] of [["initialize era", ""], ["2026-07-28", "2026-07-28"]]) {
    html = await driveOnce(era, version) ?? html;
  }
} finally {
  await context.close();
  await rm(userDataDir, { recursive: true, force: true });
}

if (html !== undefined) {
  const validator = new HtmlValidate({ extends: ["html-validate:standard", "html-validate:document"] });
  const report = await validator.validateString(html, "echo-view.html");
  const problems = report.results.flatMap((r) => r.messages.map((m) => `${m.line}:${m.column} ${m.ruleId}: ${m.message}`));
  check("the app's page is valid HTML (html-validate standard and document rules)", report.valid, problems.join("; "));
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);

// driveOnce opens the host page, runs the host under version ("" for the
// client's default) and checks what the app shows. It returns the app's
// page as read, or undefined when the host failed before reading it.
async function driveOnce(era, version) {
  const page = await context.newPage();
  const errors = [];
  page.on("console", (message) => { if (message.type() === "error") errors.push(message.text()); });
  page.on("pageerror", (err) => errors.push(err.message));
  await page.route(hostURL, (route) => route.fulfill({ contentType: "text/html; charset=utf-8", body: hostPage }));
  try {
    await page.goto(hostURL);
    await page.waitForFunction(() => typeof window.runHost === "function", null, { timeout: WAIT_MS });
    const text = `hello from the ${era} \u00e9\u00e8 <&>`;
    const report = await within(page.evaluate(({ version, text }) => window.runHost({ version, text }), { version, text }),
      "the host's run (connect, list, read, render, ui/initialize, call)");
    const want = version || "2025-11-25";
    check(`${era}: the host negotiated ${want}`, report.protocolVersion === want, report.protocolVersion);
    check(`${era}: the server declares the extension with the app MIME type`,
      report.serverExtension?.mimeTypes?.includes(APP_MIME_TYPE), JSON.stringify(report.serverExtension));
    check(`${era}: echo links to the app in _meta.ui.resourceUri`, report.resourceUri === APP_URI, report.resourceUri);
    check(`${era}: echo links to the app in the deprecated _meta["ui/resourceUri"]`, report.flatResourceUri === APP_URI, report.flatResourceUri);
    check(`${era}: resources/list lists the app with the app MIME type`, report.listed?.mimeType === APP_MIME_TYPE, JSON.stringify(report.listed));
    check(`${era}: resources/read serves the app with the app MIME type`, report.readMimeType === APP_MIME_TYPE, report.readMimeType);
    check(`${era}: the app initialized with the AppBridge`, report.appInfo?.name === "echo-view", JSON.stringify(report.appInfo));
    check(`${era}: the app reported its size`, report.sized === true);
    check(`${era}: echo's result has its text content`, report.resultText === text, report.resultText);

    const frame = page.frame({ url: "about:srcdoc" });
    check(`${era}: the app runs in a sandboxed iframe of its own origin`,
      frame !== null && await frame.evaluate(() => window.origin) === "null");
    check(`${era}: the app shows the echoed text`, await shows(frame, text), await frame?.textContent("#echo"));

    const typed = `typed in the app during the ${era}`;
    await frame.fill("#text", typed);
    await frame.click("button[type=submit]");
    check(`${era}: the app's own tools/call, through the host, shows its answer`, await shows(frame, typed), await frame.textContent("#echo"));
    check(`${era}: no errors and no CSP violations in the console`, errors.length === 0, errors.join(" | "));
    return report.html;
  } catch (err) {
    check(`${era}: the host ran`, false, err.stack ?? String(err));
    return undefined;
  } finally {
    await page.close();
  }
}

// within is promise, or a failure once WAIT_MS passed without it settling
// (page.evaluate has no timeout of its own).
function within(promise, what) {
  let timer;
  const expired = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${WAIT_MS} ms`)), WAIT_MS);
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}

// shows waits until the app's output holds text, and reports whether it did.
async function shows(frame, text) {
  if (!frame) return false;
  try {
    await frame.waitForFunction((want) => document.getElementById("echo")?.textContent === want, text, { timeout: WAIT_MS });
    return true;
  } catch {
    return false;
  }
}
