import { Controller, Get, Header, Inject, UseFilters } from '@nestjs/common';
import { SHOP_SETTINGS, type ShopSettings } from '../config/shop.settings.js';
import { CsrfToken } from '../security/csrf-token.decorator.js';
import { catalogPage } from '../views/catalog.view.js';
import { HtmlExceptionFilter } from '../views/html-exception.filter.js';
import { Catalog } from './catalog.service.js';

/** The shop's front page: the product cards with their Buy buttons. */
@Controller()
@UseFilters(HtmlExceptionFilter)
export class CatalogController {
  constructor(
    private readonly catalog: Catalog,
    @Inject(SHOP_SETTINGS) private readonly settings: ShopSettings,
  ) {}

  /** GET / : the catalog. */
  @Get()
  @Header('Content-Type', 'text/html; charset=utf-8')
  index(@CsrfToken() csrfToken: string): string {
    return catalogPage({ sandboxMode: this.settings.sandboxMode }, this.catalog.list(), csrfToken);
  }
}
