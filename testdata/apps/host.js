// A web host of MCP Apps, bundled by .ci/apps with esbuild for the page
// drive.mjs opens in Chromium. It does what a host does with the official
// @modelcontextprotocol/ext-apps host side: connects to the server over
// Streamable HTTP (the page is served from the server's origin), lists the
// tools, reads the app echo links to with resources/read, renders it in a
// sandboxed iframe under the Content-Security-Policy the specification builds
// from the app's _meta.ui.csp, connects an AppBridge to it, calls echo and
// delivers the input and the result. The AppBridge relays the app's own
// tools/call to the server. window.runHost(options) runs it all and resolves
// to what drive.mjs checks.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import {
  AppBridge,
  PostMessageTransport,
  RESOURCE_MIME_TYPE,
  RESOURCE_URI_META_KEY,
  buildAllowAttribute,
  getToolUiResourceUri,
} from "@modelcontextprotocol/ext-apps/app-bridge";

const EXTENSION_ID = "io.modelcontextprotocol/ui";

// cspFor is the policy the specification's host builds from an app's
// _meta.ui.csp, its restrictive default when there is none.
function cspFor(csp) {
  if (!csp) {
    return "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; " +
      "img-src 'self' data:; media-src 'self' data:; connect-src 'none'";
  }
  const resources = (csp.resourceDomains ?? []).join(" ");
  return [
    "default-src 'none'",
    `script-src 'self' 'unsafe-inline' ${resources}`,
    `style-src 'self' 'unsafe-inline' ${resources}`,
    `connect-src 'self' ${(csp.connectDomains ?? []).join(" ")}`,
    `img-src 'self' data: ${resources}`,
    `font-src 'self' ${resources}`,
    `media-src 'self' data: ${resources}`,
    `frame-src ${(csp.frameDomains ?? []).join(" ") || "'none'"}`,
    "object-src 'none'",
    `base-uri ${(csp.baseUriDomains ?? []).join(" ") || "'self'"}`,
  ].join("; ");
}

// withCSP puts the policy first in the page's head.
function withCSP(html, policy) {
  const meta = `<meta http-equiv="Content-Security-Policy" content="${policy.replaceAll('"', "&quot;")}">`;
  const head = /<head[^>]*>/i.exec(html);
  return head ? html.slice(0, head.index + head[0].length) + meta + html.slice(head.index + head[0].length) : meta + html;
}

window.runHost = async function runHost({ version, text }) {
  const client = new Client(
    { name: "mcpstdio-apps-host", version: "1.0.0" },
    {
      capabilities: { extensions: { [EXTENSION_ID]: { mimeTypes: [RESOURCE_MIME_TYPE] } } },
      ...(version ? { versionNegotiation: { mode: { pin: version } } } : {}),
    },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", window.location.href)));
  const report = {
    era: client.getProtocolEra?.(),
    protocolVersion: client.getNegotiatedProtocolVersion?.(),
    serverExtension: client.getServerCapabilities()?.extensions?.[EXTENSION_ID] ?? null,
  };

  const { tools } = await client.listTools();
  const echo = tools.find((tool) => tool.name === "echo");
  report.resourceUri = getToolUiResourceUri(echo);
  report.flatResourceUri = echo._meta?.[RESOURCE_URI_META_KEY];
  const { resources } = await client.listResources();
  report.listed = resources.find((resource) => resource.uri === report.resourceUri) ?? null;

  const read = await client.readResource({ uri: report.resourceUri });
  const page = read.contents[0];
  report.readMimeType = page.mimeType;
  report.html = page.text;
  const ui = page._meta?.ui ?? report.listed?._meta?.ui;

  const iframe = document.createElement("iframe");
  iframe.id = "app";
  iframe.setAttribute("sandbox", "allow-scripts allow-forms");
  iframe.setAttribute("allow", buildAllowAttribute(ui?.permissions));
  iframe.style.border = ui?.prefersBorder ? "1px solid #888" : "none";
  document.body.append(iframe);

  const bridge = new AppBridge(
    client,
    { name: "mcpstdio-apps-host", version: "1.0.0" },
    { openLinks: {}, serverTools: {}, serverResources: {}, logging: {} },
    { hostContext: { theme: "light", displayMode: "inline", availableDisplayModes: ["inline"], platform: "web" } },
  );
  const initialized = new Promise((resolve) => { bridge.oninitialized = resolve; });
  bridge.onsizechange = ({ width, height }) => {
    report.sized = true;
    if (height != null) iframe.style.height = `${height}px`;
    if (width != null) iframe.style.width = `${width}px`;
  };
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  iframe.srcdoc = withCSP(page.text, cspFor(ui?.csp));
  await initialized;
  report.appInfo = bridge.getAppVersion() ?? null;

  const args = { text };
  await bridge.sendToolInput({ arguments: args });
  const result = await client.callTool({ name: "echo", arguments: args });
  report.resultText = result.content?.[0]?.text;
  await bridge.sendToolResult(result);
  return report;
};
