CREATE TABLE "task_kind_revisions" (
	"name" text NOT NULL,
	"revision" integer NOT NULL,
	"definition" text,
	"saved_at" bigint NOT NULL,
	"saved_by" text,
	CONSTRAINT "task_kind_revisions_name_revision_pk" PRIMARY KEY("name","revision")
);
