// A real MCP client for the authorization tests: the TypeScript SDK's
// client with its client-credentials OAuth provider, which finds the
// authorization server through the MCP server's protected resource
// metadata, gets a token for the server's resource, and steps up when a
// tool needs more scopes. Run by auth_oidc_test.go:
//
//   node client.mjs SERVER_URL ERA CLIENT_ID ISSUER
//
// ERA is 2025-11-25 (initialize, a session) or 2026-07-28 (stateless, pinned).
// It lists the tools, calls echo and prints one JSON line of what it saw.
import { Client, ClientCredentialsProvider, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const [serverURL, era, clientId, issuer] = process.argv.slice(2);
const tokenRequests = [];
const fetchLogged = async (url, init) => {
  const res = await fetch(url, init);
  if (String(url).startsWith(issuer) && String(url).endsWith('/token')) {
    tokenRequests.push(new URLSearchParams(String(init?.body ?? '')).get('scope'));
  }
  return res;
};
const authProvider = new ClientCredentialsProvider({ clientId, clientSecret: `${clientId}-secret`, expectedIssuer: issuer });
const transport = new StreamableHTTPClientTransport(new URL(serverURL), { authProvider, fetch: fetchLogged });
const options = era === '2026-07-28' ? { versionNegotiation: { mode: { pin: era } } } : {};
const client = new Client({ name: 'mcpstdio-auth-test', version: '1.0.0' }, options);
try {
  await client.connect(transport);
  const tools = await client.listTools();
  const echo = await client.callTool({ name: 'echo', arguments: { text: `hello over ${era}` } });
  console.log(JSON.stringify({
    era,
    protocolVersion: client.getNegotiatedProtocolVersion?.() ?? null,
    sessionId: transport.sessionId ?? null,
    tools: tools.tools.length,
    echo: echo.content?.[0]?.text ?? null,
    tokenScopes: tokenRequests,
  }));
  await client.close();
} catch (err) {
  console.log(JSON.stringify({ era, error: String(err?.stack ?? err) }));
  process.exitCode = 1;
}
