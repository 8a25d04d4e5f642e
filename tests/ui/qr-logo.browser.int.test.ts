import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimSubdomain, createOwner, type TestOwner } from '../support/owners.js';
import { type openPage, openSignedIn, screenshot, seriousA11yViolations, startUiPlatform, type OpenedPage, type UiPlatform } from './support.js';

// Issue 40 item 8 in a real browser: the subdomain settings page uploads a logo (a file chosen
// with the file input), shows it, refuses what is no image, and removes it; a link's QR code draws
// it in the centre when "Logo in the centre" is chosen, and says so when the subdomain has none.
let platform: UiPlatform;
let scratch: string;

beforeAll(async () => {
  platform = await startUiPlatform();
  scratch = mkdtempSync(join(tmpdir(), 'qr-logo-ui-'));
}, 120_000);

afterAll(async () => {
  await platform?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

const ownerPage = (owner: TestOwner, options: Parameters<typeof openPage>[1] = {}): Promise<OpenedPage> => openSignedIn(platform, owner, options);

function logoFile(): string {
  const side = 120;
  const png = new PNG({ width: side, height: side });
  for (let i = 0; i < side * side; i++) png.data.set([220, 20, 60, 255], i * 4);
  const file = join(scratch, 'logo.png');
  writeFileSync(file, PNG.sync.write(png));
  return file;
}

describe('the QR logo in the dashboard', () => {
  it('is uploaded on the settings page, drawn in a link’s QR code when chosen, refused when no image, and removed', async () => {
    const owner = await createOwner(platform.context, platform.app);
    const subdomain = await claimSubdomain(platform.app, owner);
    const created = await platform.app.inject({
      method: 'POST',
      url: '/api/v1/links',
      headers: owner.auth,
      payload: { subdomain, target_url: 'https://example.com/qr-ui' },
    });
    const link = created.json().data;
    const { page, problems, browserContext } = await ownerPage(owner);

    // Without a logo, the link's QR code says the subdomain has none.
    await page.goto(`/links/${link.id}`);
    await page.getByLabel('Logo in the centre').check();
    await page.getByText('This subdomain has no logo yet').waitFor();

    await page.goto(`/subdomains/${subdomain}`);
    const section = page.getByRole('region', { name: 'QR code logo' });
    await section.getByText('No logo yet.').waitFor();
    // A text file is no image: refused on the field.
    const notImage = join(scratch, 'notes.png');
    writeFileSync(notImage, 'not a picture');
    await section.getByLabel('Image file').setInputFiles(notImage);
    await section.getByRole('button', { name: 'Upload' }).click();
    await page.locator('#qr-logo-file-error').filter({ hasText: 'not a PNG or JPEG' }).waitFor();

    await section.getByLabel('Image file').setInputFiles(logoFile());
    await section.getByRole('button', { name: 'Upload' }).click();
    await section.getByText('The logo was saved (120 × 120 px).').waitFor();
    await section.getByRole('img', { name: 'The current logo' }).waitFor();
    await expect.poll(() => section.getByRole('img', { name: 'The current logo' }).evaluate((img: HTMLImageElement) => img.naturalWidth)).toBe(120);
    await screenshot(page, 'qr-logo-settings-desktop');
    expect(await seriousA11yViolations(page)).toEqual([]);

    // The link's QR code with the logo: the image asks for it and loads.
    await page.goto(`/links/${link.id}`);
    await page.getByLabel('Logo in the centre').check();
    const image = page.getByRole('img', { name: /QR code/ });
    await expect.poll(() => image.getAttribute('src')).toContain('logo=true');
    await expect.poll(() => image.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0)).toBe(true);
    expect(await page.getByText('This subdomain has no logo yet').count()).toBe(0);
    expect(await page.getByRole('link', { name: /PNG/ }).getAttribute('href')).toContain('logo=true');
    await screenshot(page, 'qr-logo-link-desktop');
    expect(await seriousA11yViolations(page)).toEqual([]);

    await page.goto(`/subdomains/${subdomain}`);
    await section.getByRole('button', { name: 'Remove the logo' }).click();
    await section.getByText('The logo was removed.').waitFor();
    await section.getByText('No logo yet.').waitFor();
    expect((await platform.app.inject({ method: 'GET', url: `/api/v1/subdomains/${subdomain}/qr-logo`, headers: owner.auth })).statusCode).toBe(404);
    expect(problems).toEqual([]);
    await browserContext.close();
  });
});
