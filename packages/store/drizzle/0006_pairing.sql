CREATE TABLE `pairing_requests` (
	`id` text PRIMARY KEY NOT NULL,
	`secret_hash` text NOT NULL,
	`client_id` text NOT NULL,
	`name` text,
	`source` text NOT NULL,
	`match` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`decision` text,
	`decided_at` integer,
	`decided_by` text,
	`grants` text,
	`collected_at` integer,
	`credential_id` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `pairing_secret_idx` ON `pairing_requests` (`secret_hash`);