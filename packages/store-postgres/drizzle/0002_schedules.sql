CREATE TABLE "schedule_firings" (
	"schedule_id" text NOT NULL,
	"due_at" bigint NOT NULL,
	"fired_at" bigint NOT NULL,
	"status" text NOT NULL,
	"task_id" text,
	"error" text,
	CONSTRAINT "schedule_firings_schedule_id_due_at_pk" PRIMARY KEY("schedule_id","due_at")
);
--> statement-breakpoint
CREATE TABLE "schedules" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text,
	"spec" text NOT NULL,
	"action" text NOT NULL,
	"missed" text NOT NULL,
	"paused" boolean NOT NULL,
	"created_by" text,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	"last_due_at" bigint
);
--> statement-breakpoint
CREATE INDEX "schedule_firings_status_idx" ON "schedule_firings" USING btree ("status");