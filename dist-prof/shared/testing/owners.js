import { createAccount, loginCookie, mintToken, TEST_PASSWORD } from './accounts.js';
let addressCounter = 0;
/** Creates an account, logs it in and mints a token with links:read, links:write, stats:read and subdomain:write. */
export async function createOwner(context, app, role = 'user') {
    const account = await createAccount(context, role);
    // A fresh documentation address per login keeps the auth bucket of one address from filling up.
    addressCounter = (addressCounter % 250) + 1;
    const cookie = await loginCookie(app, account.email, TEST_PASSWORD, `198.51.100.${addressCounter}`);
    const origin = new URL(context.config.publicUrl).origin;
    const { token } = await mintToken(app, cookie, origin);
    return { ...account, cookie, token, auth: { authorization: `Bearer ${token}` } };
}
/** Claims a subdomain with a unique name for the owner and returns its name. */
export async function claimSubdomain(app, owner, policy = {}) {
    const name = `s${Math.random().toString(36).slice(2, 12)}`;
    const claimed = await app.inject({ method: 'POST', url: '/api/v1/subdomains', headers: owner.auth, payload: { name } });
    if (claimed.statusCode !== 201)
        throw new Error(`claim failed: ${claimed.statusCode} ${claimed.body}`);
    if (Object.keys(policy).length > 0) {
        const patched = await app.inject({ method: 'PATCH', url: `/api/v1/subdomains/${name}`, headers: owner.auth, payload: policy });
        if (patched.statusCode !== 200)
            throw new Error(`policy failed: ${patched.statusCode} ${patched.body}`);
    }
    return name;
}
//# sourceMappingURL=owners.js.map