// The colours of a QR code (issue 40, item 8): what the QR route accepts and the dashboard checks before asking.

export const QR_DEFAULT_FG = '000000';
export const QR_DEFAULT_BG = 'ffffff';
/** A colour as the QR route takes it: six hex digits, `#` optional (`%23` in a query). */
export const QR_COLOUR = /^#?[0-9a-fA-F]{6}$/;
/**
 * The least contrast ratio (WCAG 2 relative luminance) between the modules and the background, with
 * the modules the darker of the two: scanners binarise by brightness, and many refuse light modules on
 * a dark background. 4.5:1 is WCAG's contrast for text; the codes at the limit scan with zbarimg
 * (services/api/links/qr.int.test.ts).
 */
export const QR_MIN_CONTRAST = 4.5;

/** `#1A5FB4` → `1a5fb4`. */
export const normaliseColour = (colour: string) => colour.replace(/^#/, '').toLowerCase();

/** WCAG 2 relative luminance of `rrggbb`. */
function luminance(colour: string): number {
  const [r, g, b] = [0, 2, 4].map((at) => {
    const channel = parseInt(colour.slice(at, at + 2), 16) / 255;
    return channel <= 0.04045 ? channel / 12.92 : ((channel + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
}

/** The contrast of dark modules `fg` on background `bg` (`rrggbb`): (L_bg + 0.05) / (L_fg + 0.05), below 1 when the modules are the lighter. */
export function qrContrast(fg: string, bg: string): number {
  return (luminance(bg) + 0.05) / (luminance(fg) + 0.05);
}

/** A ratio as the refusal shows it: floored to two decimals, so that 4.478 is not shown as the 4.48 that might pass. */
export const shownContrast = (ratio: number) => (Math.floor(ratio * 100) / 100).toFixed(2);
