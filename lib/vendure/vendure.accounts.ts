import type { PaymentMethod } from '@vendure/core';
import { PaymentsClient, type PaymentsOptions } from '../core/client/index.js';
import type { PaymentsLogger } from '../core/common/index.js';
import type { HandlerLookup } from '../core/settlement/index.js';
import { isTransactional, MemoryPaymentsStore, type PaymentsStore } from '../core/store/index.js';
import { CREDENTIAL_ARGS, methodAccountOf, methodRegistration } from './vendure.credentials.js';

/** What the accounts use of the plugin and of Vendure. */
export interface VendureAccountsDeps {
  /** The plugin's client options: its own account, and what every method's account shares. */
  readonly options: PaymentsOptions;
  /** Where every account logs. */
  readonly logger: PaymentsLogger;
  /** The store of a method's own account (see `storeForPaymentMethod`). */
  readonly storeFor?: (paymentMethodCode: string) => PaymentsStore;
  /** The handlers of an account's events: `undefined` for the plugin's account, else the method's code. */
  readonly handlers: (methodCode: string | undefined) => HandlerLookup;
  /** Every PaymentMethod of every channel. */
  readonly methods: () => Promise<PaymentMethod[]>;
  /** The code of the plugin's handler (the methods that are the plugin's). */
  readonly handlerCode: string;
}

interface OwnAccount {
  readonly fingerprint: string;
  readonly client: PaymentsClient;
}

/**
 * The merchant accounts of the plugin: its own (the plugin's options), and one per payment method
 * whose handler arguments carry their own keys (one channel's, one shop's). Each account is a
 * client of its own (its registration, store, webhook tokens and reconciliation), built when
 * first needed and at start, and built again when the method's keys change. @internal
 */
export class VendureAccounts {
  /** The plugin's own account. */
  readonly plugin: PaymentsClient;
  readonly #own = new Map<string, OwnAccount>();
  readonly #stores = new Map<string, PaymentsStore>();
  #started = false;
  #loaded: Promise<void> | undefined;

  /** @param deps what the accounts use of the plugin and of Vendure */
  constructor(private readonly deps: VendureAccountsDeps) {
    this.plugin = new PaymentsClient({ ...deps.options, logger: deps.logger });
  }

  /** Sets every account's handlers (which starts its reconciliation), then builds the methods' accounts. */
  start(): void {
    this.#started = true;
    this.plugin.setHandlers(this.deps.handlers(undefined));
    this.#loaded = this.refresh();
  }

  /**
   * The client of a payment method's account: its own when its arguments carry keys, else the plugin's.
   * @throws Error naming the missing key when the method has one key without the other
   */
  clientOf(method: PaymentMethod): PaymentsClient {
    const account = methodAccountOf(method.handler.args);
    switch (account.kind) {
      case 'plugin':
        return this.plugin;
      case 'incomplete':
        throw new Error(
          `nestjs-payments: payment method ${method.code} has a ${account.missing === 'publicKey' ? CREDENTIAL_ARGS.privateKey : CREDENTIAL_ARGS.publicKey} ` +
            `but no ${account.missing}: set both (its own account), or neither (the plugin's)`,
        );
      case 'own': {
        const known = this.#own.get(method.code);
        if (known?.fingerprint === account.fingerprint) return known.client;
        const client = this.#build(method.code, account);
        this.#own.set(method.code, { fingerprint: account.fingerprint, client });
        // Its keys changed in the Admin: the old client finishes what it has in flight, then stops.
        if (known)
          known.client.close().catch((error: unknown) => {
            this.deps.logger.warn(`closing the old account of payment method ${method.code}: ${String(error)}`);
          });
        return client;
      }
      default: {
        const never: never = account;
        return never;
      }
    }
  }

  /** The account whose webhook token this is (its signature and registration tag), else the plugin's. */
  async forToken(token: string | undefined): Promise<PaymentsClient> {
    if (token === undefined) return this.plugin;
    const found = this.#ownClients().find((client) => client.webhooks.minted(token));
    if (found) return found;
    // A method added or changed since: its account is built, then asked.
    await this.refresh();
    return this.#ownClients().find((client) => client.webhooks.minted(token)) ?? this.plugin;
  }

  /** The account that made a payment (its store holds it), else the plugin's. */
  async forPayment(paymentId: string): Promise<PaymentsClient> {
    await this.#loaded;
    for (const client of this.#ownClients()) {
      if ((await client.store.findPending(paymentId)) || (await client.store.getOutcome(paymentId))) return client;
    }
    return this.plugin;
  }

  /** Builds the account of every method of the plugin's handler that has its own keys. */
  async refresh(): Promise<void> {
    try {
      for (const method of await this.deps.methods()) {
        if (method.handler.code !== this.deps.handlerCode) continue;
        try {
          this.clientOf(method);
        } catch (error) {
          this.deps.logger.error((error as Error).message);
        }
      }
    } catch (error) {
      this.deps.logger.error(`the payment methods' accounts could not be loaded: ${(error as Error).message}`);
    }
  }

  /** Lets every account's settlements in flight finish, then closes them. */
  async close(): Promise<void> {
    await Promise.all([this.plugin, ...this.#ownClients()].map((client) => client.close()));
  }

  #ownClients(): PaymentsClient[] {
    return [...this.#own.values()].map((own) => own.client);
  }

  #build(methodCode: string, account: { publicKey: string; privateKey: string; webhookSecret?: string }) {
    const { options } = this.deps;
    let store = this.#stores.get(methodCode);
    if (!store) {
      // A store shared by two accounts would mix their payments (one would verify the other's).
      if (!this.deps.storeFor && options.store)
        throw new Error(
          `nestjs-payments: payment method ${methodCode} has its own account, which needs a store of its own: set storeForPaymentMethod`,
        );
      store = this.deps.storeFor?.(methodCode) ?? new MemoryPaymentsStore();
      this.#stores.set(methodCode, store);
    }
    const webhook = account.webhookSecret
      ? { ...options.webhook, secret: account.webhookSecret, previousSecrets: [] }
      : options.webhook;
    // A transactional store's own transaction is its commit path: the core takes no inbox with it.
    const { inbox, ...shared } = options;
    let client: PaymentsClient;
    try {
      client = new PaymentsClient({
        ...shared,
        ...(inbox && !isTransactional(store) ? { inbox } : {}),
        publicKey: account.publicKey,
        privateKey: account.privateKey,
        ...(webhook ? { webhook } : {}),
        name: methodRegistration(methodCode),
        store,
        logger: this.deps.logger,
      });
    } catch (error) {
      // The core's message names options, never their values.
      throw new Error(`nestjs-payments: payment method ${methodCode}: ${(error as Error).message}`, { cause: error });
    }
    if (this.#started) client.setHandlers(this.deps.handlers(methodCode));
    return client;
  }
}
