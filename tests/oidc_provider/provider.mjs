// A real OpenID provider for Icewater's sign-in tests: the certified oidc-provider package on loopback, with its
// own login page (devInteractions: any listed account, any password), consent granted without asking, and
// RP-initiated logout. tests/signin/provider.py starts it on a free port and reads the first line it prints.
//
// Environment:
//   PORT         the port to listen on (127.0.0.1)
//   CLIENTS      JSON list of client metadata (client_id, client_secret, redirect_uris, post_logout_redirect_uris)
//   MISBEHAVE    optional, how this provider goes wrong, so Icewater's refusals meet a real provider:
//                  "foreign-key"    its JWKS publishes another key under the kid it signs with (a bad signature)
//                  "expired"        ID tokens issued an hour in the past (iat, exp) and signed properly
//                  "audience"       ID tokens addressed to another client (aud), signed properly
//                  "token-issuer"   ID tokens naming another issuer (iss), signed properly
import { generateKeyPairSync } from 'node:crypto';

import { SignJWT, decodeJwt, importJWK } from 'jose';
import Provider from 'oidc-provider';

const port = Number(process.env.PORT);
const issuer = `http://127.0.0.1:${port}`;
const clients = JSON.parse(process.env.CLIENTS || '[]');
const misbehave = process.env.MISBEHAVE || '';

// Each account: its claims. Groups drive Icewater's role map (tests/signin/provider.py names the groups).
const accounts = {
  alice: { email: 'alice@example.com', email_verified: true, groups: ['refund-annotators'] },
  lena: { email: 'lena@example.com', email_verified: true, groups: ['refund-leads', 'refund-annotators', 'staff'] },
  ursula: { email: 'ursula@example.com', email_verified: false, groups: ['refund-annotators'] },
  otto: { email: 'otto@example.com', email_verified: true, groups: ['staff', 'canteen'] },
  nomail: { groups: ['refund-annotators'] },
};

function signingKey() {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: 'icewater-test-key', alg: 'RS256', use: 'sig' };
}

const key = signingKey();

const provider = new Provider(issuer, {
  clients,
  jwks: { keys: [key] },
  cookies: { keys: ['icewater-test-provider-cookie-key'] },
  pkce: { required: () => true },
  features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
  // groups ride on the profile scope, so a relying party asking "openid email profile" gets them.
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['preferred_username', 'name', 'groups'] },
  // All claims in the ID token too, as most company providers send them.
  conformIdTokenClaims: false,
  async findAccount(ctx, id) {
    const account = accounts[id];
    if (!account) return undefined;
    return {
      accountId: id,
      async claims() {
        return { sub: id, preferred_username: id, name: id, ...account };
      },
    };
  },
  // Consent is not what these tests are about: every scope a listed client asks for is granted.
  async loadExistingGrant(ctx) {
    const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    grant.addOIDCScope('openid email profile');
    grant.addOIDCClaims(['sub', 'email', 'email_verified', 'preferred_username', 'name', 'groups']);
    await grant.save();
    return grant;
  },
});

// Misbehaviour happens on the way out of the real endpoints, after the provider did its own work.
async function resign(idToken, changes) {
  const claims = { ...decodeJwt(idToken), ...changes };
  return new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: key.kid }).sign(await importJWK(key, 'RS256'));
}

provider.use(async (ctx, next) => {
  await next();
  if (misbehave === 'foreign-key' && ctx.path === '/jwks') {
    const { kty, n, e } = signingKey();
    ctx.body = { keys: [{ kty, n, e, kid: key.kid, alg: 'RS256', use: 'sig' }] };
  }
  if (ctx.path === '/token' && ctx.status === 200 && ctx.body?.id_token) {
    const now = Math.floor(Date.now() / 1000);
    const changes = {
      expired: { iat: now - 3600, exp: now - 3000 },
      audience: { aud: 'someone-else' },
      'token-issuer': { iss: 'http://127.0.0.1:1/elsewhere' },
    }[misbehave];
    if (changes) ctx.body = { ...ctx.body, id_token: await resign(ctx.body.id_token, changes) };
  }
});

provider.listen(port, '127.0.0.1', () => {
  console.log(`listening ${issuer}`);
});
