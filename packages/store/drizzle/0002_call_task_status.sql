DROP INDEX `command_calls_task_idx`;--> statement-breakpoint
DROP INDEX `command_calls_status_idx`;--> statement-breakpoint
CREATE INDEX `command_calls_task_status_idx` ON `command_calls` (`task_id`,`status`);