CREATE TABLE "audit_log" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"at" bigint NOT NULL,
	"actor" text NOT NULL,
	"role" text NOT NULL,
	"source" text NOT NULL,
	"action" text NOT NULL,
	"target" text,
	"outcome" text NOT NULL,
	"detail" text
);
--> statement-breakpoint
CREATE TABLE "credentials" (
	"id" text PRIMARY KEY NOT NULL,
	"role" text NOT NULL,
	"client_id" text,
	"name" text,
	"key_hash" text NOT NULL,
	"grants" text,
	"created_at" bigint NOT NULL,
	"expires_at" bigint,
	"revoked_at" bigint
);
--> statement-breakpoint
CREATE TABLE "enrollment_codes" (
	"code_hash" text PRIMARY KEY NOT NULL,
	"client_id" text,
	"name" text,
	"grants" text,
	"created_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL,
	"used_at" bigint,
	"credential_id" text
);
--> statement-breakpoint
CREATE TABLE "pairing_requests" (
	"id" text PRIMARY KEY NOT NULL,
	"secret_hash" text NOT NULL,
	"client_id" text NOT NULL,
	"name" text,
	"source" text NOT NULL,
	"match" text NOT NULL,
	"created_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL,
	"decision" text,
	"decided_at" bigint,
	"decided_by" text,
	"grants" text,
	"collected_at" bigint,
	"credential_id" text
);
--> statement-breakpoint
CREATE INDEX "audit_at_idx" ON "audit_log" USING btree ("at");--> statement-breakpoint
CREATE INDEX "credentials_client_idx" ON "credentials" USING btree ("client_id");--> statement-breakpoint
CREATE UNIQUE INDEX "credentials_key_hash_idx" ON "credentials" USING btree ("key_hash");--> statement-breakpoint
CREATE UNIQUE INDEX "pairing_secret_idx" ON "pairing_requests" USING btree ("secret_hash");