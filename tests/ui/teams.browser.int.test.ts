import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimSubdomain, createOwner } from '../support/owners.js';
import { newAccount, openPage, screenshot, seriousA11yViolations, signIn, startUiPlatform, TEST_PASSWORD, type UiPlatform } from './support.js';

// The teams pages in a real browser, without SMTP: an owner creates a team and invites someone (the
// link is shown once), the invitee accepts it in a second browser after signing in, the owner
// changes the member's role and removes them, the audit log shows it, and an outsider is refused;
// a revoked and an expired invitation, each refused with its reason.
let platform: UiPlatform;

beforeAll(async () => {
  platform = await startUiPlatform();
}, 120_000);

afterAll(async () => {
  await platform?.stop();
});

const memberRow = (page: Page, email: string) => page.locator(`tr[data-member="${email}"]`);

describe('teams pages', () => {
  it('creates a team, invites with a link shown once, the invitee accepts it after signing in, a role changes, a member goes, the audit log says so', async () => {
    const owner = await newAccount(platform);
    const invitee = await newAccount(platform);
    const { page, problems, browserContext } = await openPage(platform);
    await signIn(page, owner.email);
    await page.getByRole('navigation').getByRole('link', { name: 'Teams' }).click();
    await page.getByRole('heading', { name: 'Teams', level: 1 }).waitFor();
    await page.getByText('You are in no team yet.').waitFor();

    // What the user typed is shown as text, never as markup.
    const name = 'Growth <img src=x onerror=alert(1)>';
    await page.getByLabel('Name').fill(name);
    await page.getByRole('button', { name: 'Create team' }).click();
    await page.getByRole('link', { name }).click();
    await page.getByRole('heading', { name, level: 1 }).waitFor();
    expect(await page.locator('img[src="x"]').count()).toBe(0);
    await page.getByText('Your role: owner').waitFor();
    // The members table (one row, at 1280 px) draws no border under the table's last row, its first cell included.
    const lastRow = page.locator('.team-members tbody tr').last();
    await lastRow.waitFor();
    expect(await lastRow.locator('th, td').evaluateAll((cells) => cells.map((cell) => getComputedStyle(cell).borderBottomWidth))).toEqual(Array(4).fill('0px'));

    await page.getByLabel('E-mail address').fill(invitee.email);
    await page.getByLabel('Role', { exact: true }).selectOption('editor');
    await page.getByRole('button', { name: 'Send invitation' }).click();
    const linkBox = page.getByRole('group', { name: 'Invitation link' });
    const link = (await linkBox.locator('code').textContent())!;
    expect(link).toMatch(new RegExp(`^${platform.origin}/invitations/accept#token=`));
    await page.getByText('It is shown only this once').waitFor();
    await linkBox.getByRole('button', { name: /Copy/ }).click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(link);
    await page.locator('.team-invitations li', { hasText: invitee.email }).getByText('pending').waitFor();
    await screenshot(page, 'teams-invited-desktop');
    expect(await seriousA11yViolations(page)).toEqual([]);

    // The invitee, signed out, opens the link: signing in brings them back to accept it.
    const second = await openPage(platform);
    await second.page.goto(link);
    await second.page.waitForURL(/\/login\?next=%2Finvitations%2Faccept$/);
    await second.page.getByLabel('E-mail').fill(invitee.email);
    await second.page.getByLabel('Password').fill(TEST_PASSWORD);
    await second.page.getByRole('button', { name: 'Sign in' }).click();
    await second.page.waitForURL(/\/invitations\/accept$/);
    await second.page.getByRole('heading', { name: 'Team invitation', level: 1 }).waitFor();
    await second.page.getByRole('button', { name: 'Accept the invitation' }).click();
    await second.page.getByText(`You are now editor in “${name}”.`).waitFor();
    await screenshot(second.page, 'teams-accepted-desktop');
    expect(await seriousA11yViolations(second.page)).toEqual([]);
    // The link works once (opened afresh, as from a mail).
    await second.page.goto('about:blank');
    await second.page.goto(link);
    await second.page.getByRole('button', { name: 'Accept the invitation' }).click();
    await second.page.getByText('This invitation was used already').waitFor();

    // The owner sees the member, makes them a viewer, then removes them.
    await page.reload();
    const row = memberRow(page, invitee.email);
    await row.waitFor();
    await row.getByLabel(`Role of ${invitee.email}`).selectOption('viewer');
    await page.getByText(`${invitee.email} is now viewer.`).waitFor();
    await row.getByRole('button', { name: `Remove ${invitee.email}` }).click();
    await page.getByText(`${invitee.email} was removed from the team.`).waitFor();
    // The notice comes with the answer; the list is read again after it, so wait for the row to go.
    await memberRow(page, invitee.email).waitFor({ state: 'detached' });

    // The audit log (written behind the answers): reload until the removal shows.
    for (let attempt = 0; attempt < 20 && (await page.locator('tr[data-action="team.member_removed"]').count()) === 0; attempt++) {
      await page.waitForTimeout(300);
      await page.reload();
      await page.getByRole('heading', { name: 'Audit log' }).waitFor();
    }
    const audit = page.locator('.team-audit');
    await audit.locator('tr[data-action="team.member_removed"]').getByText(owner.email).waitFor();
    // The row names who was removed too, not only who removed them.
    await audit.locator('tr[data-action="team.member_removed"]').getByText(invitee.email, { exact: false }).waitFor();
    await audit.locator('tr[data-action="team.member_role_changed"]').getByText('editor → viewer').waitFor();
    await audit.locator('tr[data-action="team.invitation_accepted"]').getByText(invitee.email).waitFor();
    await audit.locator('tr[data-action="team.created"]').waitFor();
    await screenshot(page, 'teams-audit-desktop');
    expect(await seriousA11yViolations(page)).toEqual([]);
    const teamPath = new URL(page.url()).pathname;

    // The removed member is refused at once: the forbidden state.
    await second.page.goto(teamPath);
    await second.page.getByRole('heading', { name: 'You are not allowed to see this.' }).waitFor();

    expect(problems).toEqual([]);
    expect(second.problems).toEqual([]);
    await second.browserContext.close();
    await browserContext.close();
  }, 120_000);

  it('revokes a pending invitation, whose link then says so; an expired one is listed as expired and its link says to ask again', async () => {
    const owner = await newAccount(platform);
    const revokedInvitee = await newAccount(platform);
    const lateInvitee = await newAccount(platform);
    const { page, problems, browserContext } = await openPage(platform);
    await signIn(page, owner.email);
    await page.goto('/teams');
    await page.getByLabel('Name').fill('Invitations');
    await page.getByRole('button', { name: 'Create team' }).click();
    await page.getByRole('link', { name: 'Invitations' }).click();
    await page.getByRole('heading', { name: 'Invitations', level: 1 }).waitFor();
    const invite = async (email: string) => {
      await page.getByLabel('E-mail address').fill(email);
      await page.getByRole('button', { name: 'Send invitation' }).click();
      await page.locator('.team-invitations li', { hasText: email }).getByText('pending').waitFor();
      return (await page.getByRole('group', { name: 'Invitation link' }).locator('code').textContent())!;
    };
    const revokedLink = await invite(revokedInvitee.email);
    const lateLink = await invite(lateInvitee.email);

    // Revoke, from the keyboard: the list drops it and says so.
    await page.getByRole('button', { name: `Revoke the invitation of ${revokedInvitee.email}` }).focus();
    await page.keyboard.press('Enter');
    await page.getByText(`The invitation of ${revokedInvitee.email} was revoked.`).waitFor();
    await page.locator('.team-invitations li', { hasText: revokedInvitee.email }).waitFor({ state: 'detached' });

    // Seven days pass for the other invitation (its expiry moved back in the store).
    const token = new URL(lateLink).hash.replace('#token=', '');
    expect(token).not.toBe('');
    await platform.context.db.db
      .updateTable('team_invitations')
      .set({ expires_at: new Date(Date.now() - 60_000) })
      .where('email', '=', lateInvitee.email)
      .execute();
    await page.reload();
    const late = page.locator('.team-invitations li', { hasText: lateInvitee.email });
    await late.getByText('expired').waitFor();
    expect(await late.textContent()).toContain('Expired ');
    expect(await late.textContent()).not.toContain('Expires');
    await screenshot(page, 'teams-invitation-expired-desktop');
    expect(await seriousA11yViolations(page)).toEqual([]);

    for (const [who, link, message] of [
      [revokedInvitee, revokedLink, 'This invitation was revoked by the team.'],
      [lateInvitee, lateLink, 'This invitation has expired (a link works for 7 days). Ask the team for a new one.'],
    ] as const) {
      const other = await openPage(platform);
      await signIn(other.page, who.email);
      await other.page.goto(link);
      await other.page.getByRole('button', { name: 'Accept the invitation' }).click();
      await other.page.getByText(message).waitFor();
      expect(await seriousA11yViolations(other.page)).toEqual([]);
      // Not a member: the team's page is forbidden.
      await other.page.goto(new URL(page.url()).pathname);
      await other.page.getByRole('heading', { name: 'You are not allowed to see this.' }).waitFor();
      expect(other.problems).toEqual([]);
      await other.browserContext.close();
    }
    expect(problems).toEqual([]);
    await browserContext.close();
  }, 120_000);

  it('shows the forbidden state to a non-member, and fits a phone', async () => {
    const owner = await newAccount(platform);
    const outsider = await newAccount(platform);
    const { page, browserContext } = await openPage(platform, { viewport: 'phone' });
    await signIn(page, owner.email);
    await page.goto('/teams');
    await page.getByLabel('Name').fill('A team with a rather long name that has to wrap on a phone');
    await page.getByRole('button', { name: 'Create team' }).click();
    await page.getByRole('link', { name: /rather long name/ }).click();
    await page.getByRole('heading', { name: 'Audit log' }).waitFor();
    await page.getByText('No pending invitation.').waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await screenshot(page, 'teams-team-phone');
    expect(await seriousA11yViolations(page)).toEqual([]);
    const teamPath = new URL(page.url()).pathname;
    await browserContext.close();

    const other = await openPage(platform, { viewport: 'phone' });
    await signIn(other.page, outsider.email);
    await other.page.goto(teamPath);
    await other.page.getByRole('heading', { name: 'You are not allowed to see this.' }).waitFor();
    await screenshot(other.page, 'teams-forbidden-phone');
    expect(await seriousA11yViolations(other.page)).toEqual([]);
    await other.page.goto('/invitations/accept');
    await other.page.getByText('This page needs the whole link from the invitation').waitFor();
    await other.browserContext.close();
  }, 120_000);

  it('gives a subdomain to a team from the subdomains page, filters the list by team, and takes it back', async () => {
    const owner = await createOwner(platform.context, platform.app);
    const inTeam = await claimSubdomain(platform.app, owner);
    const alone = await claimSubdomain(platform.app, owner);
    const created = await platform.app.inject({
      method: 'POST',
      url: '/api/v1/teams',
      headers: { cookie: owner.cookie, origin: platform.origin },
      payload: { name: 'Sales & <b>Co</b>' },
    });
    expect(created.statusCode).toBe(201);
    const teamId = created.json().data.id as string;
    const { page, problems, browserContext } = await openPage(platform, { viewport: 'phone' });
    await signIn(page, owner.email);
    await page.goto('/subdomains');
    const card = (name: string) => page.locator(`[data-subdomain="${name}"]`);
    await card(inTeam).getByLabel(`Team of ${inTeam}`).selectOption(teamId);
    await card(inTeam).getByRole('link', { name: 'Open “Sales & <b>Co</b>”' }).waitFor();
    const listed = await platform.app.inject({ method: 'GET', url: '/api/v1/subdomains?limit=200', headers: owner.auth });
    expect(listed.json().data.subdomains.find((subdomain: { name: string }) => subdomain.name === inTeam).team_id).toBe(teamId);

    await page.getByLabel('Team', { exact: true }).selectOption(teamId);
    await card(alone).waitFor({ state: 'detached' });
    expect(await card(inTeam).count()).toBe(1);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await screenshot(page, 'teams-subdomains-filter-phone');
    expect(await seriousA11yViolations(page)).toEqual([]);
    await page.getByLabel('Team', { exact: true }).selectOption('none');
    await card(alone).waitFor();
    expect(await card(inTeam).count()).toBe(0);

    // The team's page lists it; taking it back empties that list.
    await page.goto(`/teams/${teamId}`);
    await page.getByRole('link', { name: inTeam }).waitFor();
    await page.goto('/subdomains');
    await card(inTeam).getByLabel(`Team of ${inTeam}`).selectOption('');
    await card(inTeam)
      .getByRole('link', { name: /^Open / })
      .waitFor({ state: 'detached' });
    await page.goto(`/teams/${teamId}`);
    await page.getByText('None of your subdomains belongs to this team.').waitFor();
    expect(problems).toEqual([]);
    await browserContext.close();
  }, 120_000);
});
