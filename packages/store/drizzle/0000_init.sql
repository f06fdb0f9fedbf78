CREATE TABLE `clients` (
	`client_id` text PRIMARY KEY NOT NULL,
	`commands` text NOT NULL,
	`connected` integer NOT NULL,
	`client_version` text,
	`first_seen_at` integer NOT NULL,
	`last_seen_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `command_calls` (
	`call_id` text PRIMARY KEY NOT NULL,
	`task_id` text NOT NULL,
	`command` text NOT NULL,
	`args` text NOT NULL,
	`timeout_ms` integer NOT NULL,
	`status` text NOT NULL,
	`outcome` text,
	`dispatch_count` integer NOT NULL,
	`created_at` integer NOT NULL,
	`completed_at` integer,
	FOREIGN KEY (`task_id`) REFERENCES `tasks`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `command_calls_task_idx` ON `command_calls` (`task_id`);--> statement-breakpoint
CREATE INDEX `command_calls_status_idx` ON `command_calls` (`status`);--> statement-breakpoint
CREATE TABLE `history` (
	`task_id` text NOT NULL,
	`seq` integer NOT NULL,
	`step` integer NOT NULL,
	`at` integer NOT NULL,
	`type` text NOT NULL,
	`body` text NOT NULL,
	PRIMARY KEY(`task_id`, `seq`),
	FOREIGN KEY (`task_id`) REFERENCES `tasks`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `model_tools` (
	`client_id` text NOT NULL,
	`name` text NOT NULL,
	`status` text NOT NULL,
	`version` integer NOT NULL,
	`description` text,
	`file` text,
	`updated_at` integer,
	`recorded_at` integer NOT NULL,
	PRIMARY KEY(`client_id`, `name`),
	FOREIGN KEY (`client_id`) REFERENCES `clients`(`client_id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `model_tools_status_idx` ON `model_tools` (`status`);--> statement-breakpoint
CREATE TABLE `questions` (
	`question_id` text PRIMARY KEY NOT NULL,
	`task_id` text NOT NULL,
	`question` text NOT NULL,
	`why` text,
	`answer` text,
	`asked_at` integer NOT NULL,
	`answered_at` integer,
	FOREIGN KEY (`task_id`) REFERENCES `tasks`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `questions_task_idx` ON `questions` (`task_id`);--> statement-breakpoint
CREATE TABLE `steps` (
	`task_id` text NOT NULL,
	`seq` integer NOT NULL,
	`step` integer NOT NULL,
	`at` integer NOT NULL,
	`kind` text NOT NULL,
	`model` text,
	`input` text,
	`output` text,
	`directive` text,
	`validation_errors` text,
	`tool_call` text,
	`tool_result` text,
	`error` text,
	`started_at` integer,
	`duration_ms` real,
	`prompt_tokens` integer,
	`completion_tokens` integer,
	`total_duration_ms` real,
	PRIMARY KEY(`task_id`, `seq`),
	FOREIGN KEY (`task_id`) REFERENCES `tasks`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `tasks` (
	`id` text PRIMARY KEY NOT NULL,
	`kind` text NOT NULL,
	`status` text NOT NULL,
	`client_id` text,
	`prompt` text NOT NULL,
	`context` text,
	`allowed_commands` text NOT NULL,
	`memory` text NOT NULL,
	`metadata` text NOT NULL,
	`budgets` text NOT NULL,
	`steps_count` integer DEFAULT 0 NOT NULL,
	`tool_calls_count` integer DEFAULT 0 NOT NULL,
	`questions_count` integer DEFAULT 0 NOT NULL,
	`result` text,
	`error` text,
	`progress` real,
	`progress_message` text,
	`wake_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `tasks_status_idx` ON `tasks` (`status`);--> statement-breakpoint
CREATE INDEX `tasks_created_idx` ON `tasks` (`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `tasks_client_idx` ON `tasks` (`client_id`);--> statement-breakpoint
CREATE INDEX `tasks_kind_idx` ON `tasks` (`kind`);