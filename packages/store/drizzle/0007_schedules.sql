CREATE TABLE `schedule_firings` (
	`schedule_id` text NOT NULL,
	`due_at` integer NOT NULL,
	`fired_at` integer NOT NULL,
	`status` text NOT NULL,
	`task_id` text,
	`error` text,
	PRIMARY KEY(`schedule_id`, `due_at`)
);
--> statement-breakpoint
CREATE INDEX `schedule_firings_status_idx` ON `schedule_firings` (`status`);--> statement-breakpoint
CREATE TABLE `schedules` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text,
	`spec` text NOT NULL,
	`action` text NOT NULL,
	`missed` text NOT NULL,
	`paused` integer NOT NULL,
	`created_by` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`last_due_at` integer
);
