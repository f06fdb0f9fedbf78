CREATE TABLE `task_memory` (
	`task_id` text PRIMARY KEY NOT NULL,
	`memory` text NOT NULL,
	FOREIGN KEY (`task_id`) REFERENCES `tasks`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
-- Hand-added to the generated migration: every task keeps its memory (one task_memory row per task, always).
INSERT INTO `task_memory` (`task_id`, `memory`) SELECT `id`, `memory` FROM `tasks`;--> statement-breakpoint
ALTER TABLE `tasks` DROP COLUMN `memory`;