CREATE TABLE "clients" (
	"client_id" text PRIMARY KEY NOT NULL,
	"commands" text NOT NULL,
	"connected" boolean NOT NULL,
	"client_version" text,
	"first_seen_at" bigint NOT NULL,
	"last_seen_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "command_calls" (
	"call_id" text PRIMARY KEY NOT NULL,
	"task_id" text NOT NULL,
	"command" text NOT NULL,
	"args" text NOT NULL,
	"timeout_ms" bigint NOT NULL,
	"status" text NOT NULL,
	"outcome" text,
	"dispatch_count" integer NOT NULL,
	"created_at" bigint NOT NULL,
	"completed_at" bigint,
	"sent_to" text,
	"ord" bigint GENERATED ALWAYS AS IDENTITY (sequence name "command_calls_ord_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1)
);
--> statement-breakpoint
CREATE TABLE "history" (
	"task_id" text NOT NULL,
	"seq" integer NOT NULL,
	"step" integer NOT NULL,
	"at" bigint NOT NULL,
	"type" text NOT NULL,
	"body" text NOT NULL,
	CONSTRAINT "history_task_id_seq_pk" PRIMARY KEY("task_id","seq")
);
--> statement-breakpoint
CREATE TABLE "leases" (
	"name" text PRIMARY KEY NOT NULL,
	"holder" text NOT NULL,
	"token" bigint NOT NULL,
	"holder_pid" integer NOT NULL,
	"url" text,
	"acquired_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "model_tools" (
	"client_id" text NOT NULL,
	"name" text NOT NULL,
	"status" text NOT NULL,
	"version" integer NOT NULL,
	"description" text,
	"file" text,
	"updated_at" bigint,
	"recorded_at" bigint NOT NULL,
	CONSTRAINT "model_tools_client_id_name_pk" PRIMARY KEY("client_id","name")
);
--> statement-breakpoint
CREATE TABLE "questions" (
	"question_id" text PRIMARY KEY NOT NULL,
	"task_id" text NOT NULL,
	"question" text NOT NULL,
	"why" text,
	"answer" text,
	"asked_at" bigint NOT NULL,
	"answered_at" bigint,
	"ord" bigint GENERATED ALWAYS AS IDENTITY (sequence name "questions_ord_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1)
);
--> statement-breakpoint
CREATE TABLE "step_messages" (
	"hash" text PRIMARY KEY NOT NULL,
	"body" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "steps" (
	"task_id" text NOT NULL,
	"seq" integer NOT NULL,
	"step" integer NOT NULL,
	"at" bigint NOT NULL,
	"kind" text NOT NULL,
	"model" text,
	"input" text,
	"input_packed" text,
	"output" text,
	"directive" text,
	"validation_errors" text,
	"tool_call" text,
	"tool_result" text,
	"error" text,
	"started_at" bigint,
	"duration_ms" double precision,
	"prompt_tokens" integer,
	"completion_tokens" integer,
	"total_duration_ms" double precision,
	CONSTRAINT "steps_task_id_seq_pk" PRIMARY KEY("task_id","seq")
);
--> statement-breakpoint
CREATE TABLE "task_memory" (
	"task_id" text PRIMARY KEY NOT NULL,
	"memory" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tasks" (
	"id" text PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"status" text NOT NULL,
	"client_id" text,
	"prompt" text NOT NULL,
	"context" text,
	"allowed_commands" text NOT NULL,
	"metadata" text NOT NULL,
	"budgets" text NOT NULL,
	"steps_count" integer DEFAULT 0 NOT NULL,
	"tool_calls_count" integer DEFAULT 0 NOT NULL,
	"questions_count" integer DEFAULT 0 NOT NULL,
	"result" text,
	"error" text,
	"progress" double precision,
	"progress_message" text,
	"wake_at" bigint,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "command_calls" ADD CONSTRAINT "command_calls_task_id_tasks_id_fk" FOREIGN KEY ("task_id") REFERENCES "public"."tasks"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "history" ADD CONSTRAINT "history_task_id_tasks_id_fk" FOREIGN KEY ("task_id") REFERENCES "public"."tasks"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "model_tools" ADD CONSTRAINT "model_tools_client_id_clients_client_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."clients"("client_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "questions" ADD CONSTRAINT "questions_task_id_tasks_id_fk" FOREIGN KEY ("task_id") REFERENCES "public"."tasks"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "steps" ADD CONSTRAINT "steps_task_id_tasks_id_fk" FOREIGN KEY ("task_id") REFERENCES "public"."tasks"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "task_memory" ADD CONSTRAINT "task_memory_task_id_tasks_id_fk" FOREIGN KEY ("task_id") REFERENCES "public"."tasks"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "command_calls_task_status_idx" ON "command_calls" USING btree ("task_id","status");--> statement-breakpoint
CREATE INDEX "model_tools_status_idx" ON "model_tools" USING btree ("status");--> statement-breakpoint
CREATE INDEX "questions_task_idx" ON "questions" USING btree ("task_id");--> statement-breakpoint
CREATE INDEX "tasks_status_idx" ON "tasks" USING btree ("status");--> statement-breakpoint
CREATE INDEX "tasks_created_idx" ON "tasks" USING btree ("created_at","id");--> statement-breakpoint
CREATE INDEX "tasks_client_idx" ON "tasks" USING btree ("client_id");--> statement-breakpoint
CREATE INDEX "tasks_kind_idx" ON "tasks" USING btree ("kind");--> statement-breakpoint
CREATE INDEX "tasks_updated_idx" ON "tasks" USING btree ("updated_at");