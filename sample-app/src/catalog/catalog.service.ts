import { Injectable } from '@nestjs/common';
import { toMillimes } from 'nestjs-payments';
import { PRODUCTS, type Product } from './catalog.data.js';

/** A product with its price converted to millimes once, at start-up. */
export interface CatalogItem extends Product {
  /** Price in millimes (`'12500'` for 12.500 TND): what orders and payments carry. */
  readonly amount: string;
}

/** Read access to the products. */
@Injectable()
export class Catalog {
  // Converting here means a malformed price in the data stops the app at start, not at checkout.
  private readonly items: readonly CatalogItem[] = PRODUCTS.map((product) => ({
    ...product,
    amount: toMillimes(product.price),
  }));

  /** Every product, in display order. */
  list(): readonly CatalogItem[] {
    return this.items;
  }

  /** The product with this id, or undefined (ids come from forms, so anything may arrive). */
  find(id: unknown): CatalogItem | undefined {
    return this.items.find((item) => item.id === id);
  }
}
