import { MedusaError } from '@medusajs/framework/utils';
import type { PaymentsClient } from '../core/client/index.js';
import type { MedusaProviderContext } from './medusa.types.js';

/**
 * Card bindings as Medusa account holders and payment methods: the customer's Medusa id is the
 * service's `client_id`; paying with it creates a binding (`bindings/list` lists them). Off unless
 * the `cardBindings` option is on: then no account holder is created and no `client_id` is sent.
 */
export class MedusaBindings {
  /**
   * @param client the service's client
   * @param enabled the `cardBindings` option
   */
  constructor(
    private readonly client: PaymentsClient,
    private readonly enabled: boolean,
  ) {}

  /** The `client_id` to send with a payment: the account holder's, when bindings are on. */
  clientIdOf(context: MedusaProviderContext | undefined): string | undefined {
    const id = context?.account_holder?.data?.id;
    return this.enabled && typeof id === 'string' && id !== '' ? id : undefined;
  }

  /** The account holder of a customer (its id is the customer's), or none when bindings are off. */
  createAccountHolder(
    context: MedusaProviderContext | undefined,
  ): { id: string; data: Record<string, unknown> } | Record<string, never> {
    if (!this.enabled) return {};
    const existing = context?.account_holder?.data?.id;
    if (typeof existing === 'string' && existing !== '') return { id: existing, data: { id: existing } };
    const customerId = context?.customer?.id;
    if (!customerId)
      throw new MedusaError(MedusaError.Types.INVALID_DATA, 'createAccountHolder: no customer in the context');
    return { id: customerId, data: { id: customerId } };
  }

  /** The account holder's bindings, as payment methods (`id` is the binding id). */
  async list(
    context: MedusaProviderContext | undefined,
  ): Promise<Array<{ id: string; data: Record<string, unknown> }>> {
    const clientId = this.clientIdOf(context);
    if (!clientId) return [];
    const bindings = await this.client.listBindings(clientId);
    return bindings.map((b) => ({ id: b.bindingId, data: { ...b } }));
  }
}
