CREATE TABLE `audit_log` (
	`id` integer PRIMARY KEY NOT NULL,
	`at` integer NOT NULL,
	`actor` text NOT NULL,
	`role` text NOT NULL,
	`source` text NOT NULL,
	`action` text NOT NULL,
	`target` text,
	`outcome` text NOT NULL,
	`detail` text
);
--> statement-breakpoint
CREATE INDEX `audit_at_idx` ON `audit_log` (`at`);--> statement-breakpoint
CREATE TABLE `credentials` (
	`id` text PRIMARY KEY NOT NULL,
	`role` text NOT NULL,
	`client_id` text,
	`name` text,
	`key_hash` text NOT NULL,
	`grants` text,
	`created_at` integer NOT NULL,
	`expires_at` integer,
	`revoked_at` integer
);
--> statement-breakpoint
CREATE INDEX `credentials_client_idx` ON `credentials` (`client_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `credentials_key_hash_idx` ON `credentials` (`key_hash`);--> statement-breakpoint
CREATE TABLE `enrollment_codes` (
	`code_hash` text PRIMARY KEY NOT NULL,
	`client_id` text,
	`name` text,
	`grants` text,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`used_at` integer,
	`credential_id` text
);
