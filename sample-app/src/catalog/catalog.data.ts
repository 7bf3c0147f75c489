/** A product of the shop. Prices are written in dinars, as a merchant thinks of them. */
export interface Product {
  /** Stable identifier, used in forms. */
  readonly id: string;
  /** Display name. */
  readonly name: string;
  /** One line shown under the name. */
  readonly description: string;
  /** Price in dinars with up to 3 decimals, e.g. `'12.500'`; converted with `toMillimes`. */
  readonly price: string;
  /** Two colours of the product's picture (plain CSS: the pages load no external assets). */
  readonly colors: readonly [string, string];
  /**
   * `immediate`: paid at checkout. `later`: "pay now, capture when shipped": checkout
   * pre-authorizes the amount (`preAuthorization: true`), the shop captures it (all or part) or
   * cancels it from the admin page.
   */
  readonly capture: 'immediate' | 'later';
}

/** The shop's products. */
export const PRODUCTS: readonly Product[] = [
  {
    id: 'espresso-beans',
    name: 'Espresso beans',
    description: '1 kg of dark-roasted arabica, ground to order.',
    price: '12.500',
    colors: ['#6b3e26', '#a0522d'],
    capture: 'immediate',
  },
  {
    id: 'moka-pot',
    name: 'Moka pot',
    description: 'Six-cup aluminium stovetop brewer.',
    price: '27.750',
    colors: ['#4b5563', '#9ca3af'],
    capture: 'immediate',
  },
  {
    id: 'pour-over-set',
    name: 'Pour-over set',
    description: 'Ceramic dripper, 100 filters and a glass server.',
    price: '34.900',
    colors: ['#0f766e', '#5eead4'],
    capture: 'immediate',
  },
  {
    id: 'hand-grinder',
    name: 'Hand grinder',
    description: 'Steel conical burrs, 40 grind settings.',
    price: '89',
    colors: ['#1e3a8a', '#60a5fa'],
    capture: 'immediate',
  },
  {
    id: 'espresso-machine',
    name: 'Espresso machine',
    description: 'Made to order: your card is only charged when it ships.',
    price: '649',
    colors: ['#7f1d1d', '#f87171'],
    capture: 'later',
  },
];
