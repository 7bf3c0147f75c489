/**
 * What a merchant sees of the card on a platform's payment (Vendure's `metadata.public`,
 * Medusa's `data`), from the verify answer's `details`: never the whole card number.
 */
export interface CardDetails {
  /** The card network as the service names it (`payment_system`, e.g. `VISA`). */
  cardBrand?: string;
  /** The card number masked (the service's `pan`, e.g. `450921**1119`): at most the first six and last four digits. */
  maskedPan?: string;
  /** The issuer's approval (authorization) code (`approval_code`). */
  approvalCode?: string;
}

/** A short printable value, or nothing (the service sends `''` for fields it has not). */
function shortText(value: unknown, pattern: RegExp): string | undefined {
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  return text !== '' && text.length <= 40 && pattern.test(text) ? text : undefined;
}

/**
 * The card number as a merchant may see it. Pure. The service sends it masked (`450921**1119`):
 * kept when it shows at most the first six and the last four digits around a mask. Anything else
 * (a whole number, which the service is not documented to send, or an odd shape) is cut to its
 * last four digits (`**1119`); fewer than four digits: nothing.
 */
export function maskedPanOf(pan: unknown): string | undefined {
  if (typeof pan !== 'string') return undefined;
  const compact = pan.replace(/[\s-]/g, '');
  if (/^[0-9]{0,6}[*xX•]+[0-9]{1,4}$/.test(compact)) return compact;
  const digits = compact.replace(/\D/g, '');
  return digits.length >= 4 ? `**${digits.slice(-4)}` : undefined;
}

/** The card details of a verify answer's `details` (absent fields are left out). Pure. */
export function cardDetailsOf(details: Readonly<Record<string, unknown>> | undefined): CardDetails {
  const out: CardDetails = {};
  if (!details) return out;
  const brand = shortText(details.payment_system, /^[\w .&-]+$/);
  const pan = maskedPanOf(details.pan);
  const approval = shortText(details.approval_code, /^[A-Za-z0-9-]+$/);
  if (brand) out.cardBrand = brand;
  if (pan) out.maskedPan = pan;
  if (approval) out.approvalCode = approval;
  return out;
}
