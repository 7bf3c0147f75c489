CREATE TYPE "public"."order_capture" AS ENUM('immediate', 'later');--> statement-breakpoint
CREATE TYPE "public"."order_event_kind" AS ENUM('created', 'paid', 'failed', 'expired', 'authorized', 'captured', 'refunded', 'cancelled');--> statement-breakpoint
CREATE TYPE "public"."order_status" AS ENUM('pending', 'paid', 'failed', 'expired', 'authorized', 'captured', 'refunded', 'cancelled');--> statement-breakpoint
CREATE TABLE "order_events" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"order_id" text NOT NULL,
	"kind" "order_event_kind" NOT NULL,
	"source" text NOT NULL,
	"service_status" text,
	"detail" text,
	"at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "orders" (
	"id" text PRIMARY KEY NOT NULL,
	"items" jsonb NOT NULL,
	"amount" bigint NOT NULL,
	"status" "order_status" DEFAULT 'pending' NOT NULL,
	"capture" "order_capture" DEFAULT 'immediate' NOT NULL,
	"payment_id" text,
	"client_id" text,
	"captured_amount" bigint,
	"refund_id" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "orders_amount_positive" CHECK ("orders"."amount" > 0),
	CONSTRAINT "orders_captured_amount_range" CHECK ("orders"."captured_amount" IS NULL OR ("orders"."captured_amount" > 0 AND "orders"."captured_amount" <= "orders"."amount"))
);
--> statement-breakpoint
ALTER TABLE "order_events" ADD CONSTRAINT "order_events_order_id_orders_id_fk" FOREIGN KEY ("order_id") REFERENCES "public"."orders"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "order_events_order_kind_idx" ON "order_events" USING btree ("order_id","kind");--> statement-breakpoint
CREATE UNIQUE INDEX "orders_payment_id_idx" ON "orders" USING btree ("payment_id");--> statement-breakpoint
CREATE INDEX "orders_status_created_idx" ON "orders" USING btree ("status","created_at");