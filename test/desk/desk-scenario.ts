// The payments one desk shows, made through the real paths (the sandbox, its signed webhooks, the
// return check and reconciliation), and the checks every front end of the desk must pass.
import { expect, it } from '@jest/globals';
import type { PaymentsClient } from '../../lib/express/index.js';
import type { PaymentsSandbox } from '../../lib/testing/index.js';
import { storyLogOf } from '../../lib/store/index.js';

/** The client's secrets: never in a page. */
export const SECRETS = {
  privateKey: 'sk_desk_S3CR3T_a1b2c3d4e5f60718',
  webhookSecret: 'whsec_desk_0123456789abcdef0123456789abcd',
} as const;

/** What a customer or the service may write where the desk shows it: markup that must stay text. */
export const HOSTILE = `<script>alert("x")</script><img src=x onerror=alert(1)>'\``;

/** What the harness of one front end gives the checks. */
export interface DeskHarness {
  /** The desk's URL, without trailing slash: `http://127.0.0.1:<port>/desk`. */
  desk: string;
  client: PaymentsClient;
  sandbox: PaymentsSandbox;
  /** Tracking ids whose confirmed handler throws (with the secrets in its message). */
  failing: Set<string>;
  /** Successful confirmed-handler runs, by payment. */
  settled: Map<string, number>;
  /** Lines the desk logged. */
  logs: string[];
}

/** The confirmed handler every harness installs. */
export function confirmedHandler(
  h: Pick<DeskHarness, 'failing' | 'settled' | 'sandbox'>,
): (paymentId: string, trackingId: string | undefined) => void {
  return (paymentId, trackingId) => {
    if (trackingId !== undefined && h.failing.has(trackingId)) {
      const token = new URL(h.sandbox.getPayment(paymentId)?.webhook ?? 'http://x/none').pathname.split('/').at(-1);
      throw new Error(
        `stock service down ${HOSTILE} key=${SECRETS.privateKey} secret=${SECRETS.webhookSecret} token=${token}`,
      );
    }
    h.settled.set(paymentId, (h.settled.get(paymentId) ?? 0) + 1);
  };
}

/** The payments of the scenario. */
export interface Seeded {
  paid: string;
  failed: string;
  first: string;
  duplicate: string;
  stuck: string;
  overdue: string;
  /** Every webhook token of these payments. */
  tokens: string[];
  /** The hostile tracking id of the stuck payment. */
  stuckOrder: string;
}

/** Makes a paid, a failed, a duplicate (and the payment it duplicates), a stuck and an overdue payment. */
export async function seed(h: DeskHarness, tag: string): Promise<Seeded> {
  const { client, sandbox } = h;
  const paid = (await client.generatePayment({ amount: '12500', developerTrackingId: `${tag}-paid` })).paymentId;
  await sandbox.completePayment(paid);
  const failed = (await client.generatePayment({ amount: '3000', developerTrackingId: `${tag}-declined` })).paymentId;
  await sandbox.failPayment(failed);
  const order = `${tag}-twice`;
  const first = (
    await client.generatePayment({ amount: '7000', developerTrackingId: order }, { idempotencyKey: `${order}/1` })
  ).paymentId;
  const duplicate = (
    await client.generatePayment({ amount: '7000', developerTrackingId: order }, { idempotencyKey: `${order}/2` })
  ).paymentId;
  await sandbox.completePayment(first);
  await sandbox.completePayment(duplicate);
  // Every field a customer or the service fills, hostile: the order id and the card customer.
  // (The secrets themselves go into the handler's error: the core cuts them out of the service's
  // answers, so a tracking id holding one would come back changed, a mismatch.)
  const paidToken = new URL(sandbox.getPayment(paid)!.webhook!).pathname.split('/').at(-1)!;
  const stuckOrder = `${tag} ${HOSTILE} ${paidToken}`;
  h.failing.add(stuckOrder);
  const stuck = (
    await client.generatePayment({
      amount: '9900',
      developerTrackingId: stuckOrder,
      clientId: `cust ${HOSTILE} ${SECRETS.webhookSecret}`,
    })
  ).paymentId;
  await sandbox.completePayment(stuck, { requireDelivery: false });
  const overdue = (await client.generatePayment({ amount: '4400', developerTrackingId: `${tag}-never-paid` }))
    .paymentId;
  // Reconciliation's checks, hours ahead: the service keeps saying pending, past the fast lane.
  let now = Date.now();
  for (let i = 0; i < 6 && !(await client.getOutcome(overdue))?.lastError?.startsWith('overdue:'); i++)
    await client.runReconciliation((now += 3 * 3_600_000));
  const tokens = [paid, failed, first, duplicate, stuck, overdue].map((id) =>
    new URL(sandbox.getPayment(id)!.webhook!).pathname.split('/').at(-1)!,
  );
  return { paid, failed, first, duplicate, stuck, overdue, tokens, stuckOrder };
}

/** A page's form token. */
export function formToken(body: string): string {
  const found = /name="_csrf" value="([^"]+)"/.exec(body);
  if (!found) throw new Error('no form on the page');
  return found[1];
}

/** GET as `user` (no header: not signed in). */
export function get(url: string, user?: string): Promise<Response> {
  return fetch(url, { redirect: 'manual', headers: user === undefined ? {} : { 'x-user': user } });
}

/** POST a form as `user`. */
export function post(
  url: string,
  user: string | undefined,
  form: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(user === undefined ? {} : { 'x-user': user }),
      ...headers,
    },
    body: new URLSearchParams(form).toString(),
  });
}

/** The checks of one front end; `harness()` is ready (seeded) when the tests run. */
export function deskChecks(harness: () => DeskHarness, seeded: () => Seeded): void {
  const pay = (id: string) => `${harness().desk}/payments/${encodeURIComponent(id)}`;

  it('answers 401 to a request not signed in and 403 to one not allowed, on every page and action, and runs nothing', async () => {
    const { desk, sandbox } = harness();
    const s = seeded();
    const pages = [
      desk,
      `${desk}/search?q=${s.paid}`,
      `${desk}/charts`,
      ...[s.paid, s.failed, s.duplicate, s.stuck, s.overdue, 'no-such-payment'].map(pay),
    ];
    const actions = [`${pay(s.stuck)}/run-handlers`, `${pay(s.duplicate)}/refund`, `${pay(s.overdue)}/review`];
    const calls = sandbox.requests.length;
    for (const [user, status] of [
      [undefined, 401],
      ['mallory', 403],
    ] as const) {
      for (const url of pages) expect([url, (await get(url, user)).status]).toEqual([url, status]);
      for (const url of actions) expect([url, (await post(url, user, { _csrf: 'x' })).status]).toEqual([url, status]);
    }
    expect(sandbox.requests.length).toBe(calls);
  });

  it('lists what needs a person, with counts, under a strict Content-Security-Policy', async () => {
    const s = seeded();
    const res = await get(harness().desk, 'alice');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toMatch(
      /^default-src 'none'; style-src 'sha256-[^']+'; form-action 'self'; frame-ancestors 'none'/,
    );
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = await res.text();
    const section = (id: string) => new RegExp(`<section id="${id}">(.*?)</section>`, 's').exec(body)?.[1] ?? '';
    expect(section('failing')).toContain('Handlers failing <span class="count">(1)</span>');
    expect(section('failing')).toContain(s.stuck);
    expect(section('overdue')).toContain('(1)');
    expect(section('overdue')).toContain(s.overdue);
    expect(section('duplicates')).toContain('(1)');
    expect(section('duplicates')).toContain(s.duplicate);
    expect(section('mismatches')).toContain('(0)');
    expect(section('refunds-failed')).toContain('(0)');
    for (const id of [s.paid, s.failed, s.first]) expect(section('latest')).toContain(id);
    expect(body).not.toMatch(/<script|<img|<link|<iframe|https?:\/\//);
  });

  it('shows a paid, a failed, a duplicate and a stuck payment on their own pages', async () => {
    const s = seeded();
    const page = async (id: string) => {
      const res = await get(pay(id), 'alice');
      expect(res.status).toBe(200);
      return res.text();
    };
    expect(await page(s.paid)).toMatch(
      /<dt>Outcome<\/dt><dd>confirmed<\/dd><dt>Service status<\/dt><dd>SUCCESS<\/dd><dt>Amount \(millimes\)<\/dt><dd>12500<\/dd>/,
    );
    expect(await page(s.paid)).toContain('Nothing to do: the payment is settled.');
    // The payment that settled its order is not sent to itself as "settled by".
    expect(await page(s.paid)).toContain('This payment settled its order.');
    expect(await page(s.paid)).not.toContain('Its order was settled by payment');
    expect(await page(s.failed)).toMatch(/<dd>failed<\/dd><dt>Service status<\/dt><dd>FAILURE<\/dd>/);
    const duplicate = await page(s.duplicate);
    expect(duplicate).toContain('<dd>duplicate</dd>');
    expect(duplicate).toContain(`Its order was settled by payment <a href="/desk/payments/${s.first}">${s.first}</a>`);
    expect(duplicate).toContain('Refund this duplicate');
    const stuck = await page(s.stuck);
    expect(stuck).toMatch(/handlers failed; last error: Error: stock service down &lt;script&gt;/);
    expect(stuck).toContain('Check now and run handlers again');
    expect(await page(s.overdue)).toMatch(/Latest attempt .*outcome pending; handlers none; last error: overdue:/);
    expect((await get(pay('no-such-payment'), 'alice')).status).toBe(404);
  });

  it('finds a payment by its id and the payments of an order by its id', async () => {
    const s = seeded();
    const byId = await get(`${harness().desk}/search?q=${encodeURIComponent(s.paid)}`, 'alice');
    expect([byId.status, byId.headers.get('location')]).toEqual([303, `/desk/payments/${s.paid}`]);
    const order = (await harness().client.getOutcome(s.first))!.developerTrackingId!;
    const byOrder = await (await get(`${harness().desk}/search?q=${encodeURIComponent(order)}`, 'alice')).text();
    expect(byOrder).toContain(s.first);
    expect(byOrder).toContain(s.duplicate);
    expect(byOrder).not.toContain(s.paid);
  });

  it('finds a payment by its webhook token or webhook URL, and a customer’s card bindings, one lookup each', async () => {
    const h = harness();
    const s = seeded();
    const search = (q: string, by = '') =>
      get(`${h.desk}/search?q=${encodeURIComponent(q)}${by === '' ? '' : `&by=${by}`}`, 'alice');
    const url = h.sandbox.getPayment(s.duplicate)!.webhook!;
    for (const [q, by] of [
      [s.tokens[3], ''],
      [url, ''],
      [s.tokens[3], 'token'],
      [s.tokens[3].split('.')[0], 'token'],
    ]) {
      const res = await search(q, by);
      expect([q, res.status, res.headers.get('location')]).toEqual([q, 303, `/desk/payments/${s.duplicate}`]);
    }
    const unknown = await (await search(`${s.tokens[3].slice(0, 4)}zzzz${s.tokens[3].slice(8)}`)).text();
    expect(unknown).toContain('No payment found for this webhook token');
    const customer = await (await search(`cust ${HOSTILE} ${SECRETS.webhookSecret}`, 'customer')).text();
    expect(customer).toMatch(
      /<td>[0-9a-f-]{36}<\/td><td>cust &lt;script&gt;.*\[redacted\]<\/td><td>[^<]+ ···· \d{4}<\/td><td>active<\/td>/s,
    );
    expect(await (await search('nobody-at-all', 'customer')).text()).toContain('knows no card binding');
  });

  it('never shows a secret, a key or a webhook token, and escapes what customers and the service wrote', async () => {
    const s = seeded();
    const q = encodeURIComponent(`${HOSTILE} ${s.tokens[0]} ${SECRETS.privateKey}`);
    const pasted = (by: string) => `${harness().desk}/search?q=${q}&by=${by}`;
    const customer = encodeURIComponent(`cust ${HOSTILE} ${SECRETS.webhookSecret}`);
    const urls = [
      harness().desk,
      `${harness().desk}/search?q=${q}`,
      pasted('token'),
      pasted('customer'),
      pasted(encodeURIComponent(`${SECRETS.webhookSecret} ${s.tokens[1]}`)),
      `${harness().desk}/search?q=${customer}&by=customer`,
      `${harness().desk}/search?q=${encodeURIComponent(SECRETS.privateKey)}&by=token`,
      ...[s.paid, s.failed, s.duplicate, s.stuck, s.overdue].map(pay),
      `${harness().desk}/charts`,
    ];
    for (const url of urls) {
      const body = await (await get(url, 'alice')).text();
      for (const secret of [SECRETS.privateKey, SECRETS.webhookSecret, ...s.tokens])
        expect([url, body.includes(secret)]).toEqual([url, false]);
      expect([url, body.includes('<script>'), body.includes('<img')]).toEqual([url, false, false]);
    }
    const stuck = await (await get(pay(s.stuck), 'alice')).text();
    expect(stuck).toContain(
      '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;&#39;&#96;',
    );
    expect(stuck).toContain('key=[redacted]');
    expect(stuck).toContain('token=[redacted]');
    for (const line of harness().logs)
      for (const secret of [SECRETS.privateKey, SECRETS.webhookSecret]) expect(line).not.toContain(secret);
  });

  it('tells each payment’s story in order: created, verify and what the service said, handlers, webhook answers, a duplicate', async () => {
    const s = seeded();
    // The rows of the timeline's table: [time, what, answer, source, instance].
    const rows = async (id: string) => {
      const body = await (await get(pay(id), 'alice')).text();
      const table = /<table class="timeline">(.*?)<\/table>/s.exec(body)?.[1] ?? '';
      return [
        ...table.matchAll(/<tr><td>(.*?)<\/td><td>(.*?)<\/td><td>(.*?)<\/td><td>(.*?)<\/td><td>(.*?)<\/td><\/tr>/g),
      ].map((m) => m.slice(1, 6));
    };
    const story = (r: string[][]) => r.filter((row) => row[4] !== '').map((row) => `${row[3]} ${row[1]}: ${row[2]}`);
    const paid = await rows(s.paid);
    expect(story(paid)).toEqual([
      'generate Created: 12500 millimes',
      'webhook Verified with the service: SUCCESS',
      'webhook Handlers ran: confirmed: handled',
      'webhook Webhook delivery answered: 200 handled',
    ]);
    // Each story entry has its time and the instance that wrote it; the rows are in time order.
    for (const row of paid.filter((r) => r[4] !== '')) {
      expect(row[0]).toMatch(/^<time>\d{4}-\d\d-\d\dT/);
      expect(row[4]).toMatch(/:\d+$/);
    }
    const times = paid.filter((r) => r[0] !== 'now').map((r) => r[0]);
    expect([...times].sort()).toEqual(times);
    expect(story(await rows(s.failed))).toEqual([
      'generate Created: 3000 millimes',
      'webhook Verified with the service: FAILURE',
      'webhook Handlers ran: failed: handled',
      'webhook Webhook delivery answered: 200 handled',
    ]);
    const duplicate = story(await rows(s.duplicate));
    expect(duplicate.slice(0, 3)).toEqual([
      'generate Created: 7000 millimes',
      'webhook Verified with the service: SUCCESS',
      `webhook Duplicate charge: duplicate of ${s.first}`,
    ]);
    expect(duplicate.at(-1)).toMatch(/^webhook Webhook delivery answered: 200 /);
    const stuck = story(await rows(s.stuck));
    expect(stuck[0]).toBe('generate Created: 9900 millimes');
    expect(stuck).toContainEqual(
      expect.stringMatching(
        /^\w+ Handlers ran; error: Error: stock service down &lt;script&gt;.*key=\[redacted\].*: confirmed: failed$/,
      ),
    );
    // Written without the secrets (the store holds the story as the client's redactor left it).
    const kept = JSON.stringify(
      await storyLogOf(harness().client.store)?.entries(harness().client.name ?? '', s.stuck),
    );
    expect(kept).toContain('stock service down');
    for (const secret of [SECRETS.privateKey, SECRETS.webhookSecret]) expect(kept).not.toContain(secret);
    // The overdue payment's story: the reconciliation's checks, each what the service said.
    expect(story(await rows(s.overdue))).toContain('reconciliation Verified with the service: PENDING');
  });

  it('draws the charts of a window as SVG, from the tallies kept as outcomes happen', async () => {
    const res = await get(`${harness().desk}/charts`, 'alice');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toMatch(/^default-src 'none'/);
    const body = await res.text();
    expect(body).toContain('over the last 24 hours');
    const section = (id: string) => new RegExp(`<section id="${id}">(.*?)</section>`, 's').exec(body)?.[1] ?? '';
    const outcomes = section('outcomes');
    expect(outcomes).toMatch(/<svg [^>]*role="img" aria-labelledby="outcomes-title outcomes-desc"/);
    expect(outcomes).toContain('<title id="outcomes-title">Payments by outcome, the last 24 hours</title>');
    // paid and first confirmed, failed failed, one duplicate: the labels and values are text.
    expect(outcomes).toMatch(/<desc id="outcomes-desc">[^<]*confirmed 2[^<]*<\/desc>/);
    expect(outcomes).toMatch(/>duplicate<\/text>.*?>1<\/text>/);
    expect(outcomes).toMatch(/>failed<\/text>.*?>1<\/text>/);
    expect(section('handling')).toMatch(/Median \(p50\): \d[^;]*; p99: /);
    expect(section('calls')).toMatch(/Verify calls per settled payment<\/dt><dd>\d+\.\d\d \(\d+ settled\)/);
    expect(body).not.toMatch(/<script|style=|https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
    const week = await (await get(`${harness().desk}/charts?window=7d`, 'alice')).text();
    expect(week).toContain('over the last 7 days');
    expect(await (await get(`${harness().desk}/charts?window=ever`, 'alice')).text()).toContain(
      'over the last 24 hours',
    );
  });

  it('refuses an action without the form token, with another person’s token, or from another site', async () => {
    const s = seeded();
    const { sandbox } = harness();
    const alice = formToken(await (await get(pay(s.stuck), 'alice')).text());
    const bob = formToken(await (await get(pay(s.stuck), 'bob')).text());
    const calls = sandbox.requests.length;
    const url = `${pay(s.stuck)}/run-handlers`;
    expect((await post(url, 'alice', {})).status).toBe(403);
    expect((await post(url, 'alice', { _csrf: bob })).status).toBe(403);
    expect((await post(url, 'alice', { _csrf: `${alice}x` })).status).toBe(403);
    expect((await post(url, 'alice', { _csrf: alice }, { 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    // Express's desk answers 405; Nest routes only the desk's methods (404).
    expect([404, 405]).toContain((await get(url, 'alice')).status);
    expect(sandbox.requests.length).toBe(calls);
  });

  it('marks a failing payment reviewed: it leaves its list for Reviewed, and is back after a new failure', async () => {
    const h = harness();
    const s = seeded();
    const section = (body: string, id: string) =>
      new RegExp(`<section id="${id}">(.*?)</section>`, 's').exec(body)?.[1] ?? '';
    const token = formToken(await (await get(pay(s.stuck), 'alice')).text());
    const answers = await Promise.all([1, 2].map(() => post(`${pay(s.stuck)}/review`, 'alice', { _csrf: token })));
    expect(answers.map((r) => r.headers.get('location')?.replace(/.*done=/, '')).sort()).toEqual(
      expect.arrayContaining(['reviewed']),
    );
    const overview = await (await get(h.desk, 'alice')).text();
    expect(section(overview, 'failing')).not.toContain(s.stuck);
    expect(section(overview, 'reviewed')).toContain(s.stuck);
    expect(section(overview, 'reviewed')).toContain('Alice, <time>');
    const page = await (await get(pay(s.stuck), 'bob')).text();
    expect(page).toMatch(/Reviewed by Alice at <time>/);
    // Who did it, from the host's authorize or guard (its name), in the timeline; once.
    expect(page.split('Marked reviewed by Alice: reviewed').length).toBe(2);
    expect(page).not.toContain('>Mark reviewed<');
    // The handlers fail again (a new attempt): what it needs changed.
    await h.client.reconcilePayment(s.stuck);
    const back = await (await get(h.desk, 'alice')).text();
    expect(section(back, 'failing')).toContain(s.stuck);
    expect(section(back, 'reviewed')).not.toContain(s.stuck);
    expect(await (await get(pay(s.stuck), 'bob')).text()).toContain(
      'Reviewed earlier (it needs something else now) by Alice',
    );
  });

  it('runs the handlers of a stuck payment again once under a double submit, and logs who did it', async () => {
    const h = harness();
    const s = seeded();
    h.failing.delete(s.stuckOrder);
    const token = formToken(await (await get(pay(s.stuck), 'alice')).text());
    const [a, b] = await Promise.all([1, 2].map(() => post(`${pay(s.stuck)}/run-handlers`, 'alice', { _csrf: token })));
    expect([a.status, b.status]).toEqual([303, 303]);
    expect(h.settled.get(s.stuck)).toBe(1);
    expect(a.headers.get('location')).toMatch(new RegExp(`/desk/payments/${s.stuck}\\?done=(handled|not-handled)$`));
    const again = await post(`${pay(s.stuck)}/run-handlers`, 'alice', { _csrf: token });
    expect(again.headers.get('location')).toMatch(/done=not-handled$/);
    expect(h.settled.get(s.stuck)).toBe(1);
    expect(await h.client.getOutcome(s.stuck)).toMatchObject({ outcome: 'confirmed', handlers: 'succeeded' });
    const after = await (await get(`${pay(s.stuck)}?done=handled`, 'alice')).text();
    expect(after).toContain('The handlers ran and succeeded');
    expect(after.split('Checked now and handlers run from the desk by Alice: handled').length).toBe(2);
    expect(
      h.logs.some((l) => l.includes('"alice"') && l.includes('check and handlers run') && l.includes(s.stuck)),
    ).toBe(true);
  });

  it('refunds a duplicate once under a double submit, through the engine’s refund record', async () => {
    const h = harness();
    const s = seeded();
    const refunds = () => h.sandbox.requests.filter((r) => r.path === '/api/v2/refund_payment').length;
    const before = refunds();
    const token = formToken(await (await get(pay(s.duplicate), 'alice')).text());
    const answers = await Promise.all([1, 2].map(() => post(`${pay(s.duplicate)}/refund`, 'alice', { _csrf: token })));
    expect(answers.map((r) => r.status)).toEqual([303, 303]);
    expect(refunds()).toBe(before + 1);
    expect(await h.client.getOutcome(s.duplicate)).toMatchObject({ outcome: 'duplicate', refundState: 'refunded' });
    const third = await post(`${pay(s.duplicate)}/refund`, 'alice', { _csrf: token });
    expect(third.headers.get('location')).toMatch(/done=not-refundable$/);
    expect(refunds()).toBe(before + 1);
    const page = await (await get(pay(s.duplicate), 'alice')).text();
    expect(page).toMatch(/Refunded by the service: refund /);
    expect(page).not.toContain('Refund this duplicate');
    expect(page.split('Refund of the duplicate asked from the desk by Alice: refunded').length).toBe(2);
    expect(
      h.logs.some((l) => l.includes('"alice"') && l.includes('refund of the duplicate') && l.includes(s.duplicate)),
    ).toBe(true);
  });
}
