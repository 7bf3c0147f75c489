CREATE TABLE "shop_sessions" (
	"sid" text PRIMARY KEY NOT NULL,
	"sess" jsonb NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "shop_sessions_expires_at_idx" ON "shop_sessions" USING btree ("expires_at");