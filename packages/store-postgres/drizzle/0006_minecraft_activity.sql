CREATE TABLE "minecraft_actions" (
	"instance_id" text NOT NULL,
	"action_id" text NOT NULL,
	"type" text NOT NULL,
	"task_id" text,
	"started_at" bigint NOT NULL,
	"ended_at" bigint NOT NULL,
	"ok" boolean NOT NULL,
	"code" text,
	"error" text,
	"result" text,
	CONSTRAINT "minecraft_actions_instance_id_action_id_pk" PRIMARY KEY("instance_id","action_id")
);
--> statement-breakpoint
CREATE TABLE "minecraft_logs" (
	"instance_id" text NOT NULL,
	"seq" bigint NOT NULL,
	"at" bigint NOT NULL,
	"message" text NOT NULL,
	CONSTRAINT "minecraft_logs_instance_id_seq_pk" PRIMARY KEY("instance_id","seq")
);
--> statement-breakpoint
CREATE INDEX "minecraft_actions_started_idx" ON "minecraft_actions" USING btree ("instance_id","started_at");