CREATE TABLE `minecraft_actions` (
	`instance_id` text NOT NULL,
	`action_id` text NOT NULL,
	`type` text NOT NULL,
	`task_id` text,
	`started_at` integer NOT NULL,
	`ended_at` integer NOT NULL,
	`ok` integer NOT NULL,
	`code` text,
	`error` text,
	`result` text,
	PRIMARY KEY(`instance_id`, `action_id`)
);
--> statement-breakpoint
CREATE INDEX `minecraft_actions_started_idx` ON `minecraft_actions` (`instance_id`,`started_at`);--> statement-breakpoint
CREATE TABLE `minecraft_logs` (
	`instance_id` text NOT NULL,
	`seq` integer NOT NULL,
	`at` integer NOT NULL,
	`message` text NOT NULL,
	PRIMARY KEY(`instance_id`, `seq`)
);
