package main

// The reference server's app (docs/how-to/apps.md): a page that shows what
// the echo tool returned. It is self-contained (inline script and style,
// nothing loaded from elsewhere) and speaks the Apps protocol to its host
// itself, with postMessage: ui/initialize, then the tool's input and result
// as the host delivers them; its form calls echo again through the host.

// echoAppURI is the URI of the echo tool's app.
const echoAppURI = "ui://echo/view.html"

// registerReferenceApp registers the echo tool's app; registerReferenceTools
// links echo to it.
func registerReferenceApp(rt *Runtime, _ referenceMedia) error {
	return rt.AddApp(App{
		URI:         echoAppURI,
		Name:        "echo-view",
		Title:       "Echo",
		Description: "Shows the text the echo tool returned, and echoes more",
		HTML:        echoAppHTML,
		UI:          AppUI{PrefersBorder: new(true)},
	})
}

// echoAppHTML is the echo app's page. The page keeps to what every host
// allows without a CSP of the app's own: no request leaves the frame but
// its messages to the host.
const echoAppHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Echo</title>
<style>
:root { color-scheme: light dark; }
body {
  margin: 0;
  padding: 12px 16px;
  font-family: var(--font-sans, system-ui, sans-serif);
  color: var(--color-text-primary, CanvasText);
  background: var(--color-background-primary, Canvas);
}
#status { margin: 0 0 8px; font-size: 0.875rem; color: var(--color-text-secondary, GrayText); }
#echo { display: block; min-height: 1.5em; margin: 0 0 12px; font-size: 1.25rem; white-space: pre-wrap; overflow-wrap: anywhere; }
#echo.failed { color: var(--color-text-danger, #b00020); }
form { display: flex; gap: 8px; }
input { flex: 1; min-width: 0; font: inherit; }
button { font: inherit; }
</style>
</head>
<body>
<p id="status">Waiting for the host</p>
<output id="echo" aria-live="polite"></output>
<form id="again">
<input id="text" name="text" aria-label="Text to echo" autocomplete="off">
<button type="submit">Echo</button>
</form>
<script>
(function () {
  "use strict";
  var host = window.parent;
  var statusLine = document.getElementById("status");
  var output = document.getElementById("echo");
  var form = document.getElementById("again");
  var input = document.getElementById("text");
  var nextId = 1;
  var pending = {};

  function send(message) { host.postMessage(message, "*"); }
  function notify(method, params) { send({ jsonrpc: "2.0", method: method, params: params || {} }); }
  function request(method, params) {
    var id = nextId++;
    send({ jsonrpc: "2.0", id: id, method: method, params: params });
    return new Promise(function (resolve, reject) { pending[id] = { resolve: resolve, reject: reject }; });
  }
  function reply(id, result) { send({ jsonrpc: "2.0", id: id, result: result }); }

  // show puts a CallToolResult on the page: its text blocks, or why it failed.
  function show(result) {
    var texts = (result && result.content || []).filter(function (block) { return block.type === "text"; })
      .map(function (block) { return block.text; });
    output.textContent = texts.join("\n");
    output.className = result && result.isError ? "failed" : "";
    statusLine.textContent = result && result.isError ? "The tool failed" : "Echoed";
    reportSize();
  }
  function reportSize() {
    var root = document.documentElement;
    notify("ui/notifications/size-changed", { width: root.scrollWidth, height: root.scrollHeight });
  }
  function applyContext(context) {
    if (!context) return;
    if (context.theme === "light" || context.theme === "dark") document.documentElement.style.colorScheme = context.theme;
    var variables = context.styles && context.styles.variables || {};
    Object.keys(variables).forEach(function (name) {
      if (name.indexOf("--") === 0 && typeof variables[name] === "string") document.documentElement.style.setProperty(name, variables[name]);
    });
  }

  window.addEventListener("message", function (event) {
    var message = event.data;
    if (event.source !== host || !message || message.jsonrpc !== "2.0") return;
    if (message.method === undefined) { // a response to one of ours
      var waiter = pending[message.id];
      if (!waiter) return;
      delete pending[message.id];
      if (message.error) waiter.reject(new Error(message.error.message));
      else waiter.resolve(message.result);
      return;
    }
    switch (message.method) {
    case "ui/notifications/tool-input":
      statusLine.textContent = "Echoing";
      break;
    case "ui/notifications/tool-result":
      show(message.params);
      break;
    case "ui/notifications/tool-cancelled":
      statusLine.textContent = "Cancelled";
      break;
    case "ui/notifications/host-context-changed":
      applyContext(message.params);
      break;
    case "ui/resource-teardown":
    case "ping":
      reply(message.id, {});
      break;
    default:
      if (message.id !== undefined) send({ jsonrpc: "2.0", id: message.id, error: { code: -32601, message: "Method not found: " + message.method } });
    }
  });

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    statusLine.textContent = "Echoing";
    request("tools/call", { name: "echo", arguments: { text: input.value } }).then(show, function (err) {
      output.textContent = err.message;
      output.className = "failed";
      statusLine.textContent = "The host refused the call";
    });
  });

  request("ui/initialize", {
    appInfo: { name: "echo-view", version: "1.0.0" },
    appCapabilities: { availableDisplayModes: ["inline"] },
    protocolVersion: "2026-01-26"
  }).then(function (result) {
    applyContext(result && result.hostContext);
    notify("ui/notifications/initialized");
    statusLine.textContent = "Ready";
    reportSize();
  }, function (err) {
    statusLine.textContent = "The host refused the app: " + err.message;
  });
})();
</script>
</body>
</html>
`
