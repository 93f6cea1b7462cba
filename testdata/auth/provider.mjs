// A real OAuth 2.1 authorization server for the authorization tests:
// oidc-provider with the client-credentials grant, resource indicators (JWT
// or opaque access tokens for the resources below), DPoP (a token request
// with a DPoP proof gets a token bound to the proof's key, RFC 9449), and
// its introspection and revocation endpoints. Run by auth_oidc_test.go (node provider.mjs);
// it prints "issuer URL" once listening and stops on SIGTERM.
//
// Environment:
//   MCP_RESOURCE    the MCP server's canonical URI (required)
//   OTHER_RESOURCE  another resource it issues tokens for (another audience)
//   PORT            the port to listen on, on 127.0.0.1 (default: any free one)
//   KID, ALG        the signing key's id and algorithm (default k1, ES256;
//                   also RS256, PS256, EdDSA); a new key is made at each start
//
// Clients (client_secret_basic; the secret is the id followed by "-secret"):
//   mcp-client     JWT access tokens, scopes mcp:read mcp:admin
//   other-client   JWT access tokens, another principal
//   opaque-client  opaque access tokens, checked by introspection
//   dpop-client    JWT access tokens bound to the key of the token request's
//                  DPoP proof, which it must send (ES256, EdDSA, PS256, RS256)
//   dpop-opaque-client  the same with opaque access tokens
//   mcp-server     the MCP server itself, for introspection only
import http from 'node:http';
import { generateKeyPairSync } from 'node:crypto';
import Provider, { errors } from 'oidc-provider';

const resource = process.env.MCP_RESOURCE;
if (!resource) {
  console.error('MCP_RESOURCE is required');
  process.exit(2);
}
const resources = new Set([resource, process.env.OTHER_RESOURCE].filter(Boolean));
const alg = process.env.ALG || 'ES256';
const kid = process.env.KID || 'k1';

function signingKey() {
  const pair = {
    ES256: () => generateKeyPairSync('ec', { namedCurve: 'P-256' }),
    RS256: () => generateKeyPairSync('rsa', { modulusLength: 2048 }),
    PS256: () => generateKeyPairSync('rsa', { modulusLength: 2048 }),
    EdDSA: () => generateKeyPairSync('ed25519'),
  }[alg];
  if (!pair) {
    console.error(`ALG ${alg} is not one of ES256, RS256, PS256, EdDSA`);
    process.exit(2);
  }
  return { ...pair().privateKey.export({ format: 'jwk' }), kid, alg, use: 'sig' };
}

const client = (id, extra) => ({
  client_id: id,
  client_secret: `${id}-secret`,
  grant_types: ['client_credentials'],
  redirect_uris: [],
  response_types: [],
  token_endpoint_auth_method: 'client_secret_basic',
  scope: 'mcp:read mcp:admin',
  ...extra,
});

const server = http.createServer();
await new Promise((resolve) => server.listen(Number(process.env.PORT || 0), '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [
    client('mcp-client'),
    client('other-client'),
    client('opaque-client'),
    client('dpop-client', { dpop_bound_access_tokens: true }),
    client('dpop-opaque-client', { dpop_bound_access_tokens: true }),
    client('mcp-server', { grant_types: [], scope: undefined }),
  ],
  clientDefaults: { id_token_signed_response_alg: alg },
  scopes: ['mcp:read', 'mcp:admin'],
  jwks: { keys: [signingKey()] },
  enabledJWA: { idTokenSigningAlgValues: [alg], dPoPSigningAlgValues: ['ES256', 'EdDSA', 'PS256', 'RS256'] },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    dPoP: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, indicator, c) => {
        if (!resources.has(indicator)) {
          throw new errors.InvalidTarget();
        }
        return {
          scope: 'mcp:read mcp:admin',
          audience: indicator,
          accessTokenTTL: 600,
          accessTokenFormat: c.clientId.includes('opaque') ? 'opaque' : 'jwt',
          jwt: { sign: { alg } },
        };
      },
    },
  },
});
provider.on('server_error', (ctx, err) => console.error('server_error', err));
server.on('request', provider.callback());
console.log(`issuer ${issuer}`);
process.on('SIGTERM', () => server.close(() => process.exit(0)));
