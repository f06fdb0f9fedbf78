CREATE TABLE `task_kind_revisions` (
	`name` text NOT NULL,
	`revision` integer NOT NULL,
	`definition` text,
	`saved_at` integer NOT NULL,
	`saved_by` text,
	PRIMARY KEY(`name`, `revision`)
);
