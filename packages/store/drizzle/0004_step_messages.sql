CREATE TABLE `step_messages` (
	`hash` text PRIMARY KEY NOT NULL,
	`body` text NOT NULL
);
--> statement-breakpoint
ALTER TABLE `steps` ADD `input_packed` text;