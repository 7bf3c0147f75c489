// file: inbox-prisma.ts
import type { Prisma, PrismaClient } from '../generated/prisma/client.js';
import type { PaymentConfirmedEvent } from 'nestjs-payments';
import { sqlInbox, type InboxDialect, type PaymentsInbox } from 'nestjs-payments/store';

/**
 * The inbox on a Prisma client with a driver adapter (`@prisma/adapter-pg`, `@prisma/adapter-mariadb`):
 * the handlers run in one interactive transaction, with the inbox row.
 */
export function prismaInbox(prisma: PrismaClient, dialect: InboxDialect): PaymentsInbox {
  return sqlInbox({
    dialect,
    transaction: (run) =>
      prisma.$transaction((tx) => run({ client: tx, query: (sql, params) => tx.$queryRawUnsafe(sql, ...params) }), {
        // The handlers run inside it: give them the time they need (Prisma's default is 5 s).
        timeout: 30_000,
      }),
  });
}

/** A confirmation handler with the transaction's Prisma client. */
export async function markPaidWithPrisma(event: PaymentConfirmedEvent): Promise<void> {
  const tx = event.transaction!.client as Prisma.TransactionClient;
  await tx.order.update({ where: { id: event.developerTrackingId! }, data: { status: 'paid' } });
  await tx.orderEvent.create({ data: { orderId: event.developerTrackingId!, kind: 'paid' } });
}
